"""`ragfr gate calibrate`: fit the evidence gate for an operator's embedding model on their own questions
(issue 38 item 4), with the math of ragfr.gate.fitting.

Each question is searched as the chat searches it (production settings, no reranker); a row keeps the search's
evidence features and its label:
  answerable    an answerable question whose expected source is among the top 3 passages (what the chat
                model receives): a positive
  miss          an answerable question whose expected source is NOT in the top 3: the search failed, not the
                gate; neither fitted on nor counted in the answerable rates (its count and outcomes are printed)
  unanswerable  a question the collections do not answer: a negative
Rows are split by a hash of their id (fit / dev / test, `fitting.side_of`): the model is fitted on fit,
its thresholds chosen on dev, its rates measured on test, beside the rank rule's on the same searches and,
when one is in use for the model (shipped, or RAGFR_GATE_CALIBRATION), the fitted gate in use now.
"""

from __future__ import annotations

import json
import math
import os
import shlex
import time
from collections.abc import Iterable, Iterator, Mapping, Sequence
from dataclasses import asdict, dataclass, field
from typing import Any, TextIO

from ragfr.errors import ConfigError
from ragfr.gate import fitting
from ragfr.gate.fitted import ENV, from_json
from ragfr.retrieval.types import Hit

TOP = 3  # passages the chat model receives (ragfr.owui chat gate MAX_KEPT)
SOURCE_KEYS = ("name", "source", "file_id", "doc_id")  # chunk metadata naming its document (Open WebUI, ragfr)


@dataclass(frozen=True)
class Question:
    qid: str
    text: str
    source: str | None  # the expected source (answerable questions), None for an unanswerable one


@dataclass
class Row:
    qid: str
    kind: str  # answerable | miss | unanswerable
    side: str
    features: dict[str, float]
    rank_rule: str  # the rank rule's outcome on the same search (answer | refuse)
    now: str = ""  # the outcome of the fitted gate in use for the model before this calibration ("": none)
    top: list[str] = field(default_factory=list)  # the top passages' sources, for an operator reading misses


def read_questions(stream: TextIO, what: str, *, with_source: bool) -> list[Question]:
    out, seen = [], set()
    for n, line in enumerate(stream, 1):
        if not line.strip():
            continue
        try:
            item = json.loads(line)
            q = Question(str(item["id"]), str(item["text"]), str(item["source"]) if with_source else None)
        except (ValueError, KeyError, TypeError) as exc:
            keys = "id, text and source" if with_source else "id and text"
            raise ConfigError(f"{what} line {n}: expected a JSON object with {keys} ({exc})") from None
        if q.qid in seen:
            raise ConfigError(f"{what} line {n}: id {q.qid!r} appears twice (ids fix the fit/dev/test split)")
        seen.add(q.qid)
        out.append(q)
    return out


def sources_of(hit: Hit) -> set[str]:
    """The names a passage answers to: its chunk id, and its document's name, source (and its file name),
    Open WebUI file id and ragfr doc id as stored in the chunk metadata."""
    names = {hit.id}
    for key in SOURCE_KEYS:
        value = hit.metadata.get(key)
        if value not in (None, ""):
            names |= {str(value), os.path.basename(str(value))}
    return names


def holds(hits: Sequence[Hit], source: str) -> bool:
    return any(source in sources_of(h) for h in hits[:TOP])


def search_all(conn: Any, collections: Sequence[str], embedder: Any, answerable: Sequence[Question],
               unanswerable: Sequence[Question], dev_share: float, test_share: float,
               progress: TextIO) -> list[Row]:
    """One production search per question, labelled (module docstring). Progress lines on `progress`."""
    from ragfr.gate.rank import GateConfig, assess
    from ragfr.progress import Progress
    from ragfr.retrieval.hybrid import search

    asks = [(q, "a") for q in answerable] + [(q, "u") for q in unanswerable]
    rank = GateConfig.for_scale("rrf")
    model = str(getattr(embedder, "model_id", "") or "")
    rows = []
    with Progress(len(asks), "gate calibrate: searched", every=max(1, len(asks) // 20), stream=progress,
                  unit="question") as bar:
        for q, group in asks:
            result = search(conn, q.text, collections=collections, embedder=embedder)
            if group == "a":
                kind = "answerable" if q.source is not None and holds(result.hits, q.source) else "miss"
            else:
                kind = "unanswerable"
            now = assess(result.hits, rank, evidence=result.evidence,
                         embedding_model=result.settings.get("embedding_model") or model or None)
            rows.append(Row(q.qid, kind, fitting.side_of(f"{group}:{q.qid}", dev_share, test_share),
                            dict(result.evidence or {}), assess(result.hits, rank).outcome.value,
                            now=now.outcome.value if now.rule == "evidence" else "",
                            top=sorted(sources_of(result.hits[0]) - {result.hits[0].id}) if result.hits else []))
            bar.update(1)
    return rows


def fit_rows(rows: Sequence[Row], embedding_model: str, *, c: float = 1.0,
             targets: fitting.Targets = fitting.DEFAULT_TARGETS) -> tuple[dict[str, Any], dict[str, Any]]:
    """(report, calibration document) from labelled rows."""
    side = {s: [r for r in rows if r.side == s] for s in ("fit", "dev", "test")}
    for s, need in (("fit", "fit the model"), ("dev", "choose the thresholds")):
        kinds = {r.kind for r in side[s]}
        for kind, what in (("answerable", "answerable question found in its top 3"),
                           ("unanswerable", "unanswerable question")):
            if kind not in kinds:
                raise ConfigError(f"the {s} split has no {what} to {need}: give more questions (a few hundred of "
                                  "each kind) or change --dev-share/--test-share")
    train = [r for r in side["fit"] if r.kind != "miss"]
    model = fitting.fit([r.features for r in train], [r.kind == "answerable" for r in train], c)
    probe = from_json(fitting.calibration(embedding_model, model, {"answer_at": 1.0, "caution_at": 0.0}, {}),
                      "calibrate")
    p = {s: [probe.probability(r.features) for r in rs] for s, rs in side.items()}
    dev_pos = [pi for r, pi in zip(side["dev"], p["dev"], strict=True) if r.kind == "answerable"]
    dev_neg = [pi for r, pi in zip(side["dev"], p["dev"], strict=True) if r.kind == "unanswerable"]
    cuts = fitting.thresholds(dev_pos, dev_neg, targets)
    gate = from_json(fitting.calibration(embedding_model, model, cuts, {}), "calibrate")
    test = side["test"]
    report: dict[str, Any] = {
        "embedding_model": embedding_model, "thresholds": cuts,
        "rows": {s: {k: sum(r.kind == k for r in rs) for k in ("answerable", "miss", "unanswerable")}
                 for s, rs in side.items()},
        "test": {k: {"evidence": fitting.shares([gate.decide(r.features)[0] for r in test if r.kind == k]),
                     "rank": fitting.shares([r.rank_rule for r in test if r.kind == k]),
                     **({"now": fitting.shares([r.now for r in test if r.kind == k])}
                        if test and all(r.now for r in test) else {})}
                 for k in ("answerable", "unanswerable", "miss")},
        "auc_test": fitting.auc([pi for r, pi in zip(test, p["test"], strict=True) if r.kind == "answerable"],
                                     [pi for r, pi in zip(test, p["test"], strict=True) if r.kind == "unanswerable"]),
    }
    fitted = {"tool": "ragfr gate calibrate", "date": time.strftime("%Y-%m-%d"),
              "on": "the operator's questions: fit split (labels: expected source in the top 3 / unanswerable)",
              "thresholds_on": "dev split", "targets": asdict(targets), "rows": report["rows"], "test": report["test"]}
    return report, fitting.calibration(embedding_model, model, cuts, fitted)


def table(report: Mapping[str, Any]) -> Iterator[str]:
    """The held-out rates, one line per kind: the fitted gate beside the rank rule (and the fitted gate in use
    before, when there was one)."""
    now = "now" in report["test"]["answerable"]
    yield (f"{'held-out questions':<26} {'n':>5}   fitted gate: answer / caution / refuse   rank rule: answer / refuse"
           + ("   gate in use: answer / caution / refuse" if now else ""))
    labels = {"answerable": "answerable (source top 3)", "unanswerable": "unanswerable",
              "miss": "miss (source not top 3)"}
    for kind, label in labels.items():
        e, r = report["test"][kind]["evidence"], report["test"][kind]["rank"]
        line = (f"{label:<26} {e['n']:>5}   {e['answer']:>7.1%} / {e['caution']:>7.1%} / {e['refuse']:>7.1%}"
                f"          {r['answer']:>7.1%} / {r['refuse']:>7.1%}")
        if now:
            u = report["test"][kind]["now"]
            line += f"           {u['answer']:>7.1%} / {u['caution']:>7.1%} / {u['refuse']:>7.1%}"
        yield line


def _scalar(value: Any) -> str:
    if isinstance(value, bool) or value is None:
        return json.dumps(value)
    if isinstance(value, float):
        if not math.isfinite(value):
            raise ValueError(f"not a finite number: {value}")
        text = repr(value)
        # YAML 1.1 readers (PyYAML) read 1e-05 as a string: the mantissa needs its dot.
        mantissa, _, exp = text.partition("e")
        return text if "." in mantissa or not exp else f"{mantissa}.0e{exp}"
    if isinstance(value, int):
        return str(value)
    return json.dumps(str(value), ensure_ascii=False)


def yaml_lines(value: Any, indent: int) -> Iterable[str]:
    """Block YAML of dicts and lists of scalars (no YAML library in the product). Keys are quoted: YAML 1.1
    reads a bare `on` (fitted.on) as true."""
    pad = " " * indent
    for name, item in value.items():
        key = json.dumps(str(name), ensure_ascii=False)
        if isinstance(item, Mapping):
            yield f"{pad}{key}:" if item else f"{pad}{key}: {{}}"
            yield from yaml_lines(item, indent + 2)
        elif isinstance(item, list):
            yield f"{pad}{key}: [{', '.join(_scalar(v) for v in item)}]"
        else:
            yield f"{pad}{key}: {_scalar(item)}"


def upgrade_command(release: str, namespace: str) -> str:
    """The upgrade that applies a calibration copied into my-values.yaml, as docs/runbooks/gate-calibration.md
    gives it: without -n, helm would look for the release in the kube context's default namespace."""
    return shlex.join(["helm", "upgrade", release, "charts/ragfr", "-n", namespace, "-f", "my-values.yaml",
                       "--wait", "--timeout", "20m"])


def values_yaml(doc: Mapping[str, Any], command: str, report: Mapping[str, Any], *, release: str = "ragfr",
                namespace: str = "ragfr") -> str:
    """The chart values file (openwebui.gate.calibration), which the operator copies into my-values.yaml."""
    head = [f"# ragfr gate calibrate, {doc['fitted']['date']}: the evidence gate of {doc['embedding_model']}",
            f"# command: {command}",
            *(f"# {line}" for line in table(report)),
            "# copy openwebui.gate.calibration into my-values.yaml, then:",
            f"#   {upgrade_command(release, namespace)}",
            f"# outside the chart: {ENV}=<path of the calibration JSON>"]
    return "\n".join([*head, "openwebui:", "  gate:", "    calibration:", *yaml_lines(doc, 6)]) + "\n"
