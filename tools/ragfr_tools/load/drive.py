"""N analysts chatting at once with a knowledge base attached: each reply classified, each level summarised.

A reply is classified by what ragfr's evidence gate wrote into its sources (`ragfr_gate`,
`ragfr_gate_reason`): answered; refused (the documents do not answer, with the gate's reason); busy,
failed or refused-query (the search could not run: ragfr.owui.runtime.chat_search); ungated (no decision at all:
the question left ragfr's path); or an error (HTTP status, timeout, connection). Its signature, the gate's
decision and the chunk ids it cites or shows, is compared with the first ask of the same question.
"""

from __future__ import annotations

import json
import re
import threading
import time
import urllib.error
import urllib.request
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ragfr_tools import owui_client as client
from ragfr_tools.bench.stats import summarize

LEGACY_LINE = "Starting hybrid search"  # Open WebUI's legacy hybrid path, logged at INFO (retrieval/utils.py)
REQUEST_TIMEOUT_S = 120.0  # a chat still unanswered then is recorded as a hang (error: timeout)


# Replies that carry the gate's decision on the passages: the only ones a repeat can be compared with.
JUDGED = ("answered", "cautioned", "refused")


@dataclass(frozen=True)
class Outcome:
    kind: str  # answered, cautioned, refused, busy, failed, refused-query, ungated, error
    detail: str  # the gate's reason, or the error
    signature: tuple[str, ...]  # decision + chunk ids (cited or shown); () for errors
    seconds: float


def _reason_class(reason: str) -> str:
    """The gate's reason without its numbers: 'top RRF 0.0158 below the evidence threshold 0.0163' ->
    'top RRF below the evidence threshold'."""
    return re.sub(r"\s+", " ", re.sub(r"[-+]?\d[\d.eE+-]*", "", reason.split(":")[0])).strip()


def classify(reply: dict[str, Any], seconds: float) -> Outcome:
    metas = [m for _, m in client.passages(reply) if isinstance(m, dict) and "ragfr_gate" in m]
    if not metas:
        return Outcome("ungated", "no ragfr_gate in the sources", (), seconds)
    decision, reason = str(metas[0]["ragfr_gate"]), str(metas[0].get("ragfr_gate_reason") or "")
    chunks = tuple(str(m.get("ragfr_chunk_id")) for m in metas if m.get("ragfr_chunk_id"))
    if decision == "answer":
        return Outcome("answered", "", ("answer", *chunks), seconds)
    if decision == "caution":  # the fitted evidence gate was unsure: the model answered under a caution line
        return Outcome("cautioned", _reason_class(reason), ("caution", *chunks), seconds)
    for kind in ("busy", "failed", "refused"):
        if reason.startswith(f"search {kind}"):
            return Outcome("refused-query" if kind == "refused" else kind, reason, (f"search {kind}",), seconds)
    return Outcome("refused", _reason_class(reason), ("refuse", *chunks), seconds)


def ask_once(url: str, token: str, model: str, question: str, kb_id: str) -> Outcome:
    started = time.perf_counter()
    try:
        reply = client.ask(url, token, model, question, kb_id, timeout=REQUEST_TIMEOUT_S)
    except client.ApiError as err:
        status = re.search(r"-> (\d{3})", str(err))
        return Outcome("error", f"http-{status.group(1) if status else '?'}", (), time.perf_counter() - started)
    except (TimeoutError, urllib.error.URLError, OSError) as err:
        kind = "timeout" if "timed out" in str(err) else type(err).__name__
        return Outcome("error", kind, (), time.perf_counter() - started)
    return classify(reply, time.perf_counter() - started)


@dataclass
class Probes:
    """What the server side tells, when it can be read: the test double's counters, Open WebUI's log."""

    double_url: str | None = None
    owui_log: Path | None = None

    def embed_counts(self) -> dict[str, int] | None:
        if not self.double_url:
            return None
        try:
            with urllib.request.urlopen(self.double_url + "/ragfr/requests", timeout=10) as resp:
                counts: dict[str, int] = json.loads(resp.read())
                return counts
        except OSError:
            return None

    def legacy_lines(self) -> int | None:
        if self.owui_log is None or not self.owui_log.exists():
            return None
        return self.owui_log.read_text(encoding="utf-8", errors="replace").count(LEGACY_LINE)


@dataclass
class History:
    """First signature of each question across the whole run, and how repeats compared with it."""

    first: dict[str, tuple[str, ...]] = field(default_factory=dict)
    lock: threading.Lock = field(default_factory=threading.Lock)

    def compare(self, question: str, outcome: Outcome) -> bool | None:
        """None for a first ask, or for a reply that judged no passage (busy, failed, an error: it says the
        search did not run, nothing about the documents); else whether this repeat got the first judged
        ask's sources and decision."""
        if outcome.kind not in JUDGED:
            return None
        with self.lock:
            seen = self.first.get(question)
            if seen is None:
                self.first[question] = outcome.signature
                return None
            return seen == outcome.signature


def run_level(url: str, token: str, model: str, kb_id: str, pool: list[str], *, analysts: int, seconds: float,
              history: History, probes: Probes, say: Callable[[str], None] = print) -> dict[str, Any]:
    """`analysts` threads each ask, wait for the reply, and ask the next question of the pool (each from
    its own offset, so questions repeat across analysts and over time) until `seconds` have passed."""
    outcomes: list[Outcome] = []
    repeats: list[bool] = []
    lock = threading.Lock()
    before_embed, before_legacy = probes.embed_counts(), probes.legacy_lines()
    started = time.monotonic()
    deadline = started + seconds

    def analyst(i: int) -> None:
        n = 0
        while time.monotonic() < deadline:
            question = pool[(i * 7 + n) % len(pool)]
            n += 1
            outcome = ask_once(url, token, model, question, kb_id)
            same = history.compare(question, outcome)
            with lock:
                outcomes.append(outcome)
                if same is not None:
                    repeats.append(same)

    threads = [threading.Thread(target=analyst, args=(i,), daemon=True) for i in range(analysts)]
    for t in threads:
        t.start()
    next_say = time.monotonic() + 10
    while any(t.is_alive() for t in threads):
        for t in threads:
            t.join(timeout=max(0.0, next_say - time.monotonic()))
        if time.monotonic() >= next_say:  # every 10 s, also while the last chats drain
            next_say += 10
            with lock:
                done = len(outcomes)
            say(f"load: {analysts} analysts, {time.monotonic() - started:.0f} s, {done} chats")
    wall = time.monotonic() - started
    after_embed, after_legacy = probes.embed_counts(), probes.legacy_lines()
    kinds = Counter(o.kind for o in outcomes)
    chats = len(outcomes)

    def per_chat(key: str) -> float | None:
        if before_embed is None or after_embed is None or not chats:
            return None
        return round((after_embed.get(key, 0) - before_embed.get(key, 0)) / chats, 3)

    return {
        "analysts": analysts,
        "seconds": round(wall, 1),
        "chats": chats,
        "chats_per_s": round(chats / wall, 3) if wall else 0.0,
        "latency_s": {k: (round(v / 1000, 3) if isinstance(v, float) else v)
                      for k, v in summarize([o.seconds * 1000 for o in outcomes]).items()},
        "outcomes": dict(sorted(kinds.items())),
        "errors": dict(sorted(Counter(o.detail for o in outcomes if o.kind == "error").items())),
        "refusals": dict(sorted(Counter(o.detail for o in outcomes if o.kind == "refused").items())),
        "cautions": dict(sorted(Counter(o.detail for o in outcomes if o.kind == "cautioned").items())),
        "unavailable": dict(sorted(Counter(o.detail.split(":")[0] for o in outcomes
                                           if o.kind in ("busy", "failed", "refused-query")).items())),
        "legacy_searches": (after_legacy - before_legacy) if before_legacy is not None and after_legacy is not None
        else None,
        "embed_requests_per_chat": per_chat("embed"),
        "embedded_queries_per_chat": per_chat("embedded_queries"),
        "embedded_passages_per_chat": per_chat("embedded_passages"),
        "repeats": len(repeats),
        "repeats_identical": sum(repeats),
        "repeats_identical_fraction": round(sum(repeats) / len(repeats), 4) if repeats else None,
    }
