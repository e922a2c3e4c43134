"""`ragfr search` and the options it shares with `ragfr ask`."""

from __future__ import annotations

import argparse
import json
from typing import Any

from ragfr.cli.common import add_dsn, ef_search_arg, require_dsn
from ragfr.filters.grammar import GRAMMAR
from ragfr.retrieval import arms
from ragfr.retrieval.arms import BUILTIN
from ragfr.retrieval.rerank import ENV_VAR, FRENCH_MODEL

EPILOG = """\
how it ranks:
  lexical arm   French BM25 (Snowball stems, accents folded) on chunks containing ANY query term
  vector arm    cosine on the HNSW index, hnsw.ef_search by graph size (or --ef-search), pinned and printed;
                iterative scan relaxed_order when a filter can reject rows; float32 re-sort
  fusion        Reciprocal Rank Fusion (k=60), ties broken by chunk id
  rerank        none by default (results = the fused top -k, 10): the French cross-encoder trained here
                ranks below RRF and costs ~2.4 s a question (docs/retrieval-quality.md, "Cross-encoder").
                --rerank: a cross-encoder scores the top --rerank-candidates (10) fused chunks, keeps -k (3);
                its model is --reranker, else $RAGFR_RERANKER, else ragfr/reranker-fr, the French one
                `make reranker` trains, from the Hugging Face cache (offline; $SENTENCE_TRANSFORMERS_HOME
                when set, else the hub cache: `python -m ragfr_tools.reranker.package --out DIR` puts it there)
Filters are hard constraints applied inside both arms. If a filtered arm hits its scan budget before
finding enough rows, the result says so (underfilled, with counts) instead of coming back short in silence.

""" + GRAMMAR + """

exit status: 0 results printed (or "no result": the collection exists, nothing matched), 2 bad input,
  unknown collection, database or model unavailable.

examples:
  ragfr search --collection contrats "Comment déclarer un sinistre ?"
  ragfr search --collection contrats --filter produit=habitation --filter 'annee>=2023' \
      -k 5 --json "franchise"
  ragfr search --collection contrats --rerank --reranker .state/reranker/model-d6bd6fbf6999 "franchise"
  ragfr search --collection contrats --filter 'produit=auto|habitation' --filter 'date<2024-07-01' "vol"
  ragfr search --collection contrats --filter 'titre="Frais | options"' "franchise"
"""


def add_search_options(p: argparse.ArgumentParser) -> None:
    add_dsn(p)
    p.add_argument("--collection", action="append", required=True, metavar="NAME",
                   help="collection to search (repeat for several)")
    p.add_argument("--embedder", metavar="SPEC",
                   help="query embedder (default: the stored embedding space's model; another one is refused)")
    p.add_argument("--filter", action="append", default=[], metavar="EXPR",
                   help="hard metadata filter, e.g. produit=habitation, annee>=2023 (repeatable)")
    p.add_argument("-k", type=int, default=None,
                   help="results to return (default 10; 3 with --rerank)")
    rerank = p.add_mutually_exclusive_group()
    rerank.add_argument("--rerank", action="store_true",
                        help="rerank the fused candidates with a cross-encoder (off by default, see below)")
    # Kept for the scripts and docs that spell out the old opt-out; it is now the default.
    rerank.add_argument("--no-rerank", action="store_true",
                        help="no cross-encoder, results = fused top -k (the default)")
    p.add_argument("--reranker", default=None, metavar="PATH_OR_NAME",
                   help=f"cross-encoder directory or Hugging Face name, used with --rerank (default ${ENV_VAR}, "
                        f"else {FRENCH_MODEL} from the Hugging Face cache)")
    p.add_argument("--rerank-candidates", type=int, default=10,
                   help="fused chunks the cross-encoder sees with --rerank (default 10)")
    p.add_argument("--ef-search", type=ef_search_arg, default=None, metavar="N|auto",
                   help="hnsw.ef_search, 1-1000 (default auto: 100 up to 300k chunks in the graph, 200 above, "
                        "from the recall benchmark; the value used is printed with the results)")
    for arm in BUILTIN:  # --lexical-only, --semantic-only
        p.add_argument(f"--{arm.name}-only", action="store_true", help=f"only the {arm.description} arm")
    p.add_argument("--json", action="store_true", help="machine-readable output")


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("search", help="hybrid French search over ingested chunks",
                       description="Hybrid French search: BM25 + vector arms, RRF; a cross-encoder on request.",
                       epilog=EPILOG, formatter_class=argparse.RawDescriptionHelpFormatter)
    add_search_options(p)
    p.add_argument("query", help="the question or keywords (quote it)")
    p.set_defaults(func=run)


def run_search(args: argparse.Namespace) -> Any:
    from ragfr.db.connect import connect
    from ragfr.embed import load_embedder, parse_spec, read_space
    from ragfr.errors import ConfigError
    from ragfr.filters.grammar import parse_condition
    from ragfr.retrieval.collections import require_collections
    from ragfr.retrieval.config import SearchConfig
    from ragfr.retrieval.hybrid import search
    from ragfr.retrieval.rerank import load_reranker, require_reranker_files, resolve_model

    chosen = [arm for arm in BUILTIN if getattr(args, f"{arm.name}_only")]
    if len(chosen) > 1:
        raise ConfigError(f"{' and '.join(f'--{arm.name}-only' for arm in chosen)} exclude each other")
    if args.embedder is not None:
        parse_spec(args.embedder)  # "" is refused, never read as "the default"
    conditions = [parse_condition(f) for f in args.filter]
    rerank = bool(args.rerank)
    if args.reranker is not None and not rerank:
        # A model named without --rerank would be silently unused: say so rather than search without it.
        raise ConfigError("--reranker names the cross-encoder of --rerank; add --rerank (reranking is off by default)")
    k = args.k if args.k is not None else (3 if rerank else 10)
    changes: dict[str, Any] = {
        "k": k, "rerank": rerank, "rerank_keep": k, "rerank_top_n": max(args.rerank_candidates, k),
    }
    if args.ef_search is not None:
        changes["ef_search"] = args.ef_search
    config = arms.only(SearchConfig().with_(**changes), chosen or BUILTIN)
    reranker = None
    if rerank:
        model = resolve_model(args.reranker)
        require_reranker_files(model)  # seconds before loading torch, same message as a failed load
        reranker = load_reranker(model)  # fails loudly before any query runs
    with connect(require_dsn(args)) as conn:
        require_collections(conn, args.collection)
        embedder = None
        if arms.reads(config, arms.VECTOR):
            embedder = load_embedder(args.embedder if args.embedder is not None else read_space(conn).model)
        return search(conn, args.query, collections=args.collection, conditions=conditions, embedder=embedder,
                      config=config, reranker=reranker)


def run(args: argparse.Namespace) -> int:
    result = run_search(args)
    if args.json:
        print(json.dumps(result.to_json(), ensure_ascii=False, indent=2))
        return 0
    if not result.hits:
        print("no result")
    for i, h in enumerate(result.hits, 1):
        short = {arm.name: arm.short for arm in BUILTIN}
        ranks = " ".join(f"{short.get(arm, arm)}={h.ranks.get(arm) or '-'}" for arm in h.arm_names())
        ranks += f" rrf={h.rrf_score:.5f}"
        if h.relevance is not None:  # what Open WebUI's citation shows beside the passage (ragfr.gate.relevance)
            ranks += f" relevance={100 * h.relevance:.2f}%"
        if h.rerank_score is not None:
            ranks += f" rerank={h.rerank_score:.3f}"
        snippet = " ".join(h.text.split())[:200]
        print(f"{i}. {h.id}  [{ranks}]\n   {snippet}")
    if result.underfilled:
        print(f"UNDERFILLED: {result.underfill_reason}")
    s = result.settings
    print(f"(ef_search={s['ef_search']} ({s['ef_search_rule']}) iterative_scan={s['iterative_scan']} "
          f"rrf_k={s['rrf_k']} model={s['embedding_model']})")
    return 0
