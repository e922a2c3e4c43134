"""`ragfr gate check`: the evidence gate's decision on a file of questions, as `ragfr ask` (and the chat)
would take it, without calling any chat model (issue 38 item 5). `ragfr gate calibrate`: fit that gate for the
collection's embedding model on an operator's questions (issue 38 item 4; ragfr.eval.gate_calibrate)."""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Callable, Iterator
from typing import Any, TextIO

from ragfr.cli.common import add_dsn, require_dsn
from ragfr.errors import ConfigError

CALIBRATE_EPILOG = """\
--answerable: JSON lines {"id": ..., "text": ..., "source": ...}, questions your documents answer. "source" names
  the document that holds the answer as the chunks store it: the uploaded file's name in Open WebUI (e.g.
  "contrat-habitation.pdf"), or its file id, or a chunk id; `ragfr gate check` prints each hit's metadata
  (name, source, file_id) if unsure.
--unanswerable: JSON lines {"id": ..., "text": ...}, questions your users ask that these documents do NOT
  answer: near your domain (the hard ones) and off it. A few hundred of each kind; ids unique per file.

Each question is searched once (one embedder load). An answerable question counts as a positive when its source
is in the top 3 passages, else as a "miss" (a search failure no gate can fix; printed, not fitted). The rows are
split by a hash of their id: the model is fitted on one part, its two thresholds are chosen on --dev-share,
and the rates printed are those of --test-share, questions the fit never saw, beside today's rank rule:
  answerable (source top 3)   answered / cautioned / refused   (you want few refused)
  unanswerable                answered / cautioned / refused   (you want most refused)
The two thresholds follow three targets on the dev split, recorded with the calibration: --not-refused (the
caution threshold), --answered and --unanswerable-answered (the answer threshold). Lower --answered or
--unanswerable-answered to caution more of the questions near your domain; raise --answered to caution fewer.

--out is a Helm values file (openwebui.gate.calibration): copy that key into the release's my-values.yaml and
`helm upgrade ragfr charts/ragfr -n ragfr -f my-values.yaml --wait --timeout 20m` (the release and namespace of
--release and --namespace); the chat's gate then uses it for this embedding model
(docs/runbooks/gate-calibration.md).
Outside the chart, write --calibration-json and set RAGFR_GATE_CALIBRATION to its path (ragfr ask, gate check).

examples:
  ragfr gate calibrate --collection contrats --answerable answerable.jsonl --unanswerable unanswerable.jsonl
  ragfr gate check --collection contrats --questions answerable.jsonl   # then, with the values applied
"""

EPILOG = """\
--questions: JSON lines, each {"id": ..., "text": ...}; "-" reads them from stdin. One JSON line per question
on stdout: id, decision (answer, caution or refuse), rule (evidence: the fitted gate of the collection's
embedding model, or the model-free gate when none was fitted for it, as the first line on stderr says; rank: a
cross-encoder scale), probability (the fitted gate's, else null), reason,
absent_subject (the question's subject no searched document names, beside a caution or refusal: its French
sentence ends the reason; null otherwise), subject_changed ("answer -> caution" or "caution -> refuse" when
that subject lowered the verdict, else null), and hits as `ragfr search --json` prints them (metadata
included). The embedder is loaded once for the whole file.

examples:
  ragfr gate check --collection contrats --questions questions.jsonl
  echo '{"id": "q1", "text": "Quel délai de résiliation ?"}' | ragfr gate check --collection contrats --questions -
"""


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("gate", help="the evidence gate: check its decisions, calibrate it for your model",
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
    cal = verbs.add_parser("calibrate", help="fit the gate for the collection's embedding model on your questions",
                           description="Fit the evidence gate on answerable and unanswerable questions, print "
                           "its held-out rates and write the chart values that make the chat use it.",
                           epilog=CALIBRATE_EPILOG, formatter_class=argparse.RawDescriptionHelpFormatter)
    add_dsn(cal)
    cal.add_argument("--collection", action="append", required=True, metavar="NAME",
                     help="collection to search (repeat for several)")
    cal.add_argument("--answerable", required=True, metavar="FILE", help='JSON lines with "id", "text", "source"')
    cal.add_argument("--unanswerable", required=True, metavar="FILE", help='JSON lines with "id", "text"')
    cal.add_argument("--out", default="gate-values.yaml", metavar="FILE",
                     help="the Helm values file to write (default: %(default)s)")
    cal.add_argument("--release", default="ragfr", metavar="NAME",
                     help="the Helm release the printed upgrade command names (default: %(default)s)")
    cal.add_argument("--namespace", default="ragfr", metavar="NS",
                     help="its namespace, in the printed upgrade command (default: %(default)s)")
    cal.add_argument("--calibration-json", metavar="FILE", help="also write the calibration as JSON "
                     "(RAGFR_GATE_CALIBRATION=FILE for ragfr ask / gate check outside the chart)")
    cal.add_argument("--dev-share", type=_share, default=0.25, metavar="S",
                     help="share of the questions the thresholds are chosen on (default: %(default)s)")
    cal.add_argument("--test-share", type=_share, default=0.3, metavar="S",
                     help="share held out, on which the rates are printed (default: %(default)s)")
    # Defaults: ragfr.gate.fitting.DEFAULT_TARGETS (not imported here: numpy on every CLI start).
    cal.add_argument("--not-refused", type=_target, metavar="S",
                     help="share of the answerable questions the gate must not refuse, on the dev split: sets the "
                          "caution threshold (default: 0.975)")
    cal.add_argument("--answered", type=_target, metavar="S",
                     help="share of them answered without caution, unless that answers more than "
                          "--unanswerable-answered of the unanswerable: sets the answer threshold (default: 0.92)")
    cal.add_argument("--unanswerable-answered", type=_target, metavar="S",
                     help="most share of the unanswerable questions answered without caution (default: 0.02); "
                          "lower it, or --answered, for more cautions near your documents' domain")
    cal.set_defaults(func=run_calibrate)


def _number(low: float, high: float, outside: str) -> Callable[[str], float]:
    """An argparse type: a number from `low` to `high`, else `outside` (with {value})."""
    def parse(text: str) -> float:
        try:
            value = float(text)
        except ValueError:
            raise argparse.ArgumentTypeError(f"not a number: {text!r}") from None
        if not low <= value <= high:
            raise argparse.ArgumentTypeError(outside.format(value=value))
        return value
    return parse


_target = _number(0.0, 1.0, "{value} is not a share between 0 and 1")
_share = _number(0.05, 0.6, "{value} is outside 0.05-0.6")


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
    from ragfr.gate.fitted import describe
    from ragfr.retrieval.collections import require_collections
    from ragfr.retrieval.hybrid import search

    stream = sys.stdin if args.questions == "-" else open(args.questions, encoding="utf-8")
    try:
        with connect(require_dsn(args)) as conn:
            require_collections(conn, args.collection)
            model = read_space(conn).model
            embedder = load_embedder(model)
            print(f"gate check: {describe(model)}", file=sys.stderr, flush=True)
            for qid, text in questions(stream):
                result = search(conn, text, collections=args.collection, embedder=embedder)
                decision = gate_search(result)
                print(json.dumps({"id": qid, "decision": decision.outcome.value, "rule": decision.rule,
                                  "probability": decision.probability, "reason": decision.reason,
                                  "absent_subject": decision.summary()["absent_subject"],
                                  "subject_changed": decision.subject_changed,
                                  "hits": [h.to_json() for h in result.hits]}, ensure_ascii=False), flush=True)
    finally:
        if stream is not sys.stdin:
            stream.close()
    return 0


def run_calibrate(args: argparse.Namespace) -> int:
    import json
    import shlex
    from pathlib import Path

    from ragfr.db.connect import connect
    from ragfr.embed import load_embedder, read_space
    from ragfr.eval import gate_calibrate as cal
    from ragfr.gate.fitting import DEFAULT_TARGETS, Targets
    from ragfr.retrieval.collections import require_collections

    if args.dev_share + args.test_share > 0.8:
        raise ConfigError("--dev-share + --test-share leave less than 20 % of the questions to fit on")
    with open(args.answerable, encoding="utf-8") as f:
        answerable = cal.read_questions(f, "--answerable", with_source=True)
    with open(args.unanswerable, encoding="utf-8") as f:
        unanswerable = cal.read_questions(f, "--unanswerable", with_source=False)
    with connect(require_dsn(args)) as conn:
        require_collections(conn, args.collection)
        model = read_space(conn).model
        print(f"gate calibrate: {len(answerable)} answerable + {len(unanswerable)} unanswerable questions, "
              f"embedding model {model}", file=sys.stderr, flush=True)
        embedder = load_embedder(model)
        rows = cal.search_all(conn, args.collection, embedder, answerable, unanswerable, args.dev_share,
                              args.test_share, sys.stderr)
    chosen = {"not_refused": args.not_refused, "answered": args.answered,
              "negatives_answered": args.unanswerable_answered}
    targets = Targets(**{k: v if v is not None else getattr(DEFAULT_TARGETS, k) for k, v in chosen.items()})
    report, doc = cal.fit_rows(rows, model, targets=targets)
    flags = {"not_refused": "--not-refused", "answered": "--answered", "negatives_answered": "--unanswerable-answered"}
    command = shlex.join(["ragfr", "gate", "calibrate", *[a for c in args.collection for a in ("--collection", c)],
                          "--answerable", args.answerable, "--unanswerable", args.unanswerable,
                          "--dev-share", str(args.dev_share), "--test-share", str(args.test_share),
                          *[a for k, v in chosen.items() if v is not None for a in (flags[k], str(v))]])
    doc["fitted"]["command"] = command
    for line in cal.table(report):
        print(line)
    t = report["thresholds"]
    print(f"thresholds (dev split): answer at p >= {t['answer_at']:.4f}, caution at p >= {t['caution_at']:.4f}; "
          f"AUC (held out) {report['auc_test'] if report['auc_test'] is None else round(report['auc_test'], 3)}")
    print("questions per split (answerable / miss / unanswerable): "
          + "; ".join(f"{s} {r['answerable']}/{r['miss']}/{r['unanswerable']}" for s, r in report["rows"].items()))
    Path(args.out).write_text(cal.values_yaml(doc, command, report, release=args.release,
                                              namespace=args.namespace), encoding="utf-8")
    print(f"wrote {args.out}: copy its openwebui.gate.calibration into my-values.yaml, then "
          f"{cal.upgrade_command(args.release, args.namespace)}")
    if args.calibration_json:
        Path(args.calibration_json).write_text(json.dumps(doc, indent=2, sort_keys=True) + "\n", encoding="utf-8")
        print(f"wrote {args.calibration_json}: RAGFR_GATE_CALIBRATION={args.calibration_json} for ragfr ask and "
              "gate check")
    return 0
