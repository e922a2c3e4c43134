"""`make load` / `python -m ragfr_tools.load`: N analysts chatting at once with a knowledge base attached.

Against a running Open WebUI (by default `make up`'s on http://127.0.0.1:8080; `--url` for another, e.g.
the cluster smoke's pod), through its HTTP API as the browser calls it:
  1. signs in (RAGFR_LOAD_EMAIL / RAGFR_LOAD_PASSWORD, by default the account this tool signs up as the
     first one on a fresh Open WebUI);
  2. uploads --documents PIAF paragraphs (../shared/datasets/piaf, seeded) to a new knowledge base, each
     processed before the next;
  3. for each concurrency level, --seconds of analysts asking from a pool of --questions questions
     written on those paragraphs, the knowledge base attached;
  4. prints a table and writes --out (JSON): per level chats/s, latency p50/p95/max, outcomes (answered,
     refused, busy, failed, refused-query, ungated, error), errors and refusals by reason, Open WebUI
     legacy-path searches (from its log), embedding calls and embedded texts per chat (from the Ollama-API
     test double's counters), and how many repeated questions got the same sources and gate decision.
Examples:
  make up && make load                                   # levels 1,4,8,16,32, 90 s each, 200 documents
  python -m ragfr_tools.load --levels 8 --seconds 30 --documents 40 --questions 20
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from ragfr.errors import ConfigError, RagfrError
from ragfr_tools import owui_client as client
from ragfr_tools.bench.stats import load_average, machine
from ragfr_tools.devserver.server import CHAT_MODEL
from ragfr_tools.load.corpus import Corpus, team_corpus
from ragfr_tools.load.drive import History, Probes, run_level
from ragfr_tools.repo import PIAF_JSON, REPO

UP_STATE = REPO / ".state" / "owui"


def say(message: str) -> None:
    print(message, flush=True)  # progress also when stdout is a file or a pipe


def levels(text: str) -> list[int]:
    try:
        out = [int(x) for x in text.split(",") if x.strip()]
    except ValueError:
        out = []
    if not out or any(n < 1 for n in out):
        raise argparse.ArgumentTypeError(f"{text!r}: give positive whole numbers separated by commas, e.g. 1,4,8")
    return out


def build_parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="python -m ragfr_tools.load", description=__doc__,
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--url", default="http://127.0.0.1:8080", help="Open WebUI (default: make up's)")
    p.add_argument("--model", default=None,
                   help=f"chat model (default: the test double's {CHAT_MODEL}:latest when make up runs it)")
    p.add_argument("--levels", type=levels, default=[1, 4, 8, 16, 32], help="concurrent analysts per level")
    p.add_argument("--seconds", type=float, default=90.0, help="duration of each level (default 90)")
    p.add_argument("--documents", type=int, default=200, help="PIAF paragraphs uploaded (default 200)")
    p.add_argument("--questions", type=int, default=30, help="question pool (default 30)")
    p.add_argument("--seed", type=int, default=0, help="which paragraphs (default 0)")
    p.add_argument("--piaf", type=Path, default=PIAF_JSON, help=f"PIAF file (default {PIAF_JSON})")
    p.add_argument("--double-url", default=None, help="the Ollama-API test double, for embedding counts "
                   "(default: make up's, from .state/owui/double.port)")
    p.add_argument("--owui-log", type=Path, default=None, help="Open WebUI's log, for legacy-path searches "
                   "(default: make up's .state/owui/open-webui.log)")
    p.add_argument("--out", type=Path, default=None, help="write the JSON report here")
    return p


def sign_in(url: str) -> str:
    email = os.environ.get("RAGFR_LOAD_EMAIL", client.ADMIN["email"])
    password = os.environ.get("RAGFR_LOAD_PASSWORD", client.ADMIN["password"])
    try:
        return str(client.call("POST", url + "/api/v1/auths/signin", {"email": email, "password": password})["token"])
    except client.ApiError as first:
        try:
            return client.sign_up_admin(url)
        except client.ApiError:
            raise ConfigError(f"cannot sign in to {url} as {email} ({first}); on an Open WebUI that already has "
                              "accounts set RAGFR_LOAD_EMAIL and RAGFR_LOAD_PASSWORD") from None


def upload(url: str, token: str, corpus: Corpus, name: str) -> str:
    api = url + "/api/v1"
    kb = client.call("POST", api + "/knowledge/create", {"name": name, "description": "ragfr load harness"}, token)
    started = time.monotonic()
    for n, (filename, text) in enumerate(corpus.documents.items(), 1):
        raw, ctype = client.multipart(filename, text.encode("utf-8"))
        uploaded = client.call("POST", api + "/files/?process=true&process_in_background=false", token=token,
                               raw=raw, content_type=ctype)
        client.call("POST", f"{api}/knowledge/{kb['id']}/file/add", {"file_id": uploaded["id"]}, token)
        if n % 20 == 0 or n == len(corpus.documents):
            say(f"load: uploaded {n}/{len(corpus.documents)} documents ({time.monotonic() - started:.0f} s)")
    return str(kb["id"])


def table(report: dict[str, Any]) -> str:
    rows = ["| analysts | chats | chats/s | p50 s | p95 s | max s | outcomes | legacy | embed calls / chat | "
            "passages embedded / chat | repeats identical |", "|" + "---|" * 11]
    for lv in report["levels"]:
        lat = lv["latency_s"]
        outcomes = ", ".join(f"{k} {v}" for k, v in lv["outcomes"].items())
        rep = f"{lv['repeats_identical']}/{lv['repeats']}"
        rows.append(f"| {lv['analysts']} | {lv['chats']} | {lv['chats_per_s']} | {lat.get('p50')} | {lat.get('p95')} | "
                    f"{lat.get('max')} | {outcomes} | {lv['legacy_searches']} | {lv['embed_requests_per_chat']} | "
                    f"{lv['embedded_passages_per_chat']} | {rep} |")
    return "\n".join(rows)


def main(argv: Sequence[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    double_url = args.double_url
    if double_url is None and (UP_STATE / "double.port").exists():
        double_url = f"http://127.0.0.1:{(UP_STATE / 'double.port').read_text().strip()}"
    log = args.owui_log or (UP_STATE / "open-webui.log")
    model = args.model or (f"{CHAT_MODEL}:latest" if double_url else None)
    try:
        if model is None:
            raise ConfigError("no test double found: name the chat model with --model (e.g. qwen2.5:3b)")
        corpus = team_corpus(args.piaf, documents=args.documents, questions=args.questions, seed=args.seed)
        token = sign_in(args.url)
        say(f"load: {args.url}, model {model}, {len(corpus.documents)} documents, {len(corpus.questions)} questions")
        kb_id = upload(args.url, token, corpus, f"ragfr-load-s{args.seed}-{len(corpus.documents)}-{int(time.time())}")
        probes = Probes(double_url, log if log.exists() else None)
        history = History()
        pool = [q for q, _ in corpus.questions]
        report: dict[str, Any] = {"url": args.url, "model": model, "documents": len(corpus.documents),
                                  "questions": len(pool), "seed": args.seed, "seconds_per_level": args.seconds,
                                  "machine": machine(), "levels": []}
        for n in args.levels:
            report["levels"].append(run_level(args.url, token, model, kb_id, pool, analysts=n, seconds=args.seconds,
                                              history=history, probes=probes, say=say))
            report["levels"][-1]["load_average"] = load_average()
    except RagfrError as err:
        print(f"load: {err}", file=sys.stderr)
        return 2
    except client.ApiError as err:
        print(f"load: Open WebUI refused: {err}", file=sys.stderr)
        return 1
    say(table(report))
    if args.out:
        args.out.parent.mkdir(parents=True, exist_ok=True)
        args.out.write_text(json.dumps(report, indent=2, ensure_ascii=False) + "\n", encoding="utf-8")
        say(f"load: wrote {args.out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
