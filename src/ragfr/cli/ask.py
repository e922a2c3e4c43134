"""`ragfr ask`: search, the evidence gate, then a cited answer from the chat model — or a diagnostic."""

from __future__ import annotations

import argparse
import json
import os

from ragfr.ask import CAUTION, OllamaChat
from ragfr.cli.common import bounded_number
from ragfr.cli.search import add_search_options

EPILOG = """\
No synthesis below the evidence threshold: when the evidence does not clear it, the chat model is NOT
called; you get `grounded: false`, the scores and the threshold they missed. The rule is the chat's
(ragfr/gate/rank.py): the fitted evidence gate of the collection's embedding model when the package
ships one (answer, answer with a caution line, or refuse; `rule: evidence`, docs/retrieval-quality.md),
else RRF scores, or the cross-encoder's logits when the hits were reranked AND $RAGFR_GATE_CE_EVIDENCE
holds a calibrated threshold (docs/runbooks/calibrate-relevance-threshold.md). When a head noun of the
question's subject is in no passage of the collections, an answer becomes a caution and a caution a refusal,
and the French sentence naming it (« Aucun des documents joints ne mentionne « … ». ») is printed first
(`evidence.reason_fr` with --json). `ragfr gate check` prints the decision for a file of questions without
calling any model.

No cross-encoder by default (the fused top -k, 10, go to the gate): the French one trained here ranks below
RRF and costs ~2.4 s a question (docs/retrieval-quality.md, "Cross-encoder"). --rerank turns it on, as in
`ragfr search`: the model is --reranker, else $RAGFR_RERANKER, else ragfr/reranker-fr (`make reranker`'s
model) from the Hugging Face cache, offline ($SENTENCE_TRANSFORMERS_HOME when set, else the hub cache).

examples:
  ragfr ask --collection contrats "Quel est le délai pour déclarer un vol ?"
  ragfr ask --collection contrats --json --chat-model qwen2.5:3b "Qu'est-ce qui n'est pas couvert ?"
  RAGFR_RERANKER=.state/reranker/model-d6bd6fbf6999 ragfr ask --collection contrats --rerank "Qui paie la franchise ?"
"""


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("ask", help="grounded answer with citations, or an honest 'not enough evidence'",
                       description="Search, gate on evidence, then answer through Ollama chat citing chunk ids.",
                       epilog=EPILOG, formatter_class=argparse.RawDescriptionHelpFormatter)
    add_search_options(p)
    p.add_argument("--chat-model", default=os.environ.get("RAGFR_CHAT_MODEL", "qwen2.5:3b"),
                   help="Ollama chat model (default $RAGFR_CHAT_MODEL or qwen2.5:3b); host from $OLLAMA_HOST")
    p.add_argument("--chat-timeout", type=bounded_number("seconds", 86400), metavar="SECONDS",
                   default=os.environ.get("RAGFR_CHAT_TIMEOUT", "300"),  # a string default goes through `type`
                   help="give up on the chat model after this many seconds (default $RAGFR_CHAT_TIMEOUT or 300)")
    p.add_argument("question")
    p.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    from ragfr.ask import answer
    from ragfr.cli.search import run_search

    args.query = args.question
    result = run_search(args)
    out = answer(result, _chat_client(args.chat_timeout), args.chat_model)
    if args.json:
        print(json.dumps(out.to_json(), ensure_ascii=False, indent=2))
    elif out.grounded:
        if out.evidence.outcome.value == "caution":
            print(" ".join(filter(None, [CAUTION, out.evidence.reason_fr])) + "\n")
        print(out.answer)
        print(f"\nsources: {', '.join(out.citations)}")
    else:
        if out.evidence.reason_fr:  # the subject no document names: what the analyst can act on
            print(out.evidence.reason_fr)
        print(f"Pas assez d'éléments pour répondre (grounded: false). {out.evidence.reason}")
        for doc_id, score in out.scores():
            print(f"  {doc_id}: {'-' if score is None else f'{score:.5f}'}")
    return 0 if out.grounded else 3


def _chat_client(timeout: float) -> OllamaChat:
    return OllamaChat(timeout=timeout)
