"""`ragfr gate check`: the evidence gate's decision on a file of questions, as `ragfr ask` (and the chat)
would take it, without calling any chat model (issue 38 item 5)."""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Iterator
from typing import Any, TextIO

from ragfr.cli.common import add_dsn, require_dsn
from ragfr.errors import ConfigError

EPILOG = """\
--questions: JSON lines, each {"id": ..., "text": ...}; "-" reads them from stdin. One JSON line per question
on stdout: id, decision (answer, caution or refuse), rule (evidence: the fitted gate of the collection's
embedding model; rank: no fitted gate for it), probability (the fitted gate's, else null), reason, and hits
as `ragfr search --json` prints them (metadata included). The embedder is loaded once for the whole file.

examples:
  ragfr gate check --collection contrats --questions questions.jsonl
  echo '{"id": "q1", "text": "Quel délai de résiliation ?"}' | ragfr gate check --collection contrats --questions -
"""


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("gate", help="the evidence gate: check its decisions on questions",
                       description="The evidence gate of `ragfr ask` and the chat.")
    verbs = p.add_subparsers(dest="gate_command", metavar="VERB", required=True)
    check = verbs.add_parser("check", help="one decision per question of a JSON-lines file, no chat model",
                             description="Search each question and print the gate's decision, as `ragfr ask`.",
                             epilog=EPILOG, formatter_class=argparse.RawDescriptionHelpFormatter)
    add_dsn(check)
    check.add_argument("--collection", action="append", required=True, metavar="NAME",
                       help="collection to search (repeat for several)")
    check.add_argument("--questions", required=True, metavar="FILE",
                       help='JSON lines with "id" and "text"; - for stdin')
    check.set_defaults(func=run)


def questions(stream: TextIO) -> Iterator[tuple[Any, str]]:
    for n, line in enumerate(stream, 1):
        if not line.strip():
            continue
        try:
            item = json.loads(line)
            yield item["id"], str(item["text"])
        except (ValueError, KeyError, TypeError) as exc:
            raise ConfigError(f"--questions line {n}: expected a JSON object with id and text ({exc})") from None


def run(args: argparse.Namespace) -> int:
    from ragfr.ask import gate_search
    from ragfr.db.connect import connect
    from ragfr.embed import load_embedder, read_space
    from ragfr.retrieval.collections import require_collections
    from ragfr.retrieval.hybrid import search

    stream = sys.stdin if args.questions == "-" else open(args.questions, encoding="utf-8")
    try:
        with connect(require_dsn(args)) as conn:
            require_collections(conn, args.collection)
            embedder = load_embedder(read_space(conn).model)
            for qid, text in questions(stream):
                result = search(conn, text, collections=args.collection, embedder=embedder)
                decision = gate_search(result)
                print(json.dumps({"id": qid, "decision": decision.outcome.value, "rule": decision.rule,
                                  "probability": decision.probability, "reason": decision.reason,
                                  "hits": [h.to_json() for h in result.hits]}, ensure_ascii=False), flush=True)
    finally:
        if stream is not sys.stdin:
            stream.close()
    return 0
