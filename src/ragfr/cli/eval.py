"""`ragfr eval`: retrieval quality of every configuration side by side on a BEIR dataset, and the CI gate."""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

from ragfr.cli.common import add_dsn, require_dsn
from ragfr.eval import ragfr_configs
from ragfr.eval.configs import DEFAULT_DEPTH
from ragfr.eval.registry import config_names
from ragfr.retrieval.rerank import ENV_VAR, FRENCH_MODEL

# Only ragfr's own configurations are gated: the Open WebUI baselines are context, not our product.
DEFAULT_GATED = ragfr_configs.GATED  # ragfr-lexical, ragfr-vector, ragfr-hybrid
RERANK_CONFIG = ragfr_configs.RERANK  # the one configuration --reranker applies to


def register(subparsers: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    parser = subparsers.add_parser(
        "eval",
        help="measure retrieval quality (recall@k, MRR@10, nDCG@10) of each configuration on a BEIR dataset",
        formatter_class=argparse.RawDescriptionHelpFormatter,
        description=(
            "Ingest DIR's corpus with production ingestion (same chunker, same writer) into a collection named\n"
            "after the corpus hash, the embedder and the chunking (reused when they match), embed every query\n"
            "once, rank it with each configuration and score the DOCUMENT ranking (a document ranks where its\n"
            "best chunk ranks) against DIR/qrels/test.tsv.\n\n"
            "Configurations (default: all; unavailable ones are reported as skipped, with the reason):\n"
            "  bm25-whitespace      stock Open WebUI legacy keyword arm: rank_bm25 over text.split()\n"
            "  pg-simple-and        stock Open WebUI native keyword arm: 'simple' AND tsquery + ts_rank_cd\n"
            + "".join(f"  {spec.name:<20} {spec.description}\n" for spec in ragfr_configs.SPECS) +
            "                       (the ragfr-* ones all call ragfr.retrieval.hybrid.search with different arm\n"
            "                       switches; the cross-encoder's model: --reranker)\n"
            "  owui-native          Open WebUI 0.12.4's own PgvectorClient.hybrid_search (needs .venv-owui)\n\n"
            "DIR uses the BEIR layout: corpus.jsonl (_id, title, text[, metadata]), queries.jsonl (_id, text\n"
            "[, filters, tags]), qrels/test.tsv (query-id, corpus-id, score). The database's embedding space\n"
            "must match --embedder (create one with `ragfr migrate --dims 384 --embedding-model SPEC`)."
        ),
        epilog=(
            "examples:\n"
            "  ragfr eval --dataset eval/golden --embedder local:multilingual-e5-small\n"
            "  ragfr eval --dataset .cache/piaf --limit-queries 2000 --seed 1 --json --out piaf.jsonl\n"
            "  ragfr eval --dataset eval/golden --configs ragfr-hybrid,ragfr-hybrid-rerank \\\n"
            "      --reranker .state/reranker/model-d6bd6fbf6999\n"
            "  ragfr eval --dataset eval/golden --baseline eval/baselines.json --suite golden   # CI gate\n\n"
            "exit status: 0 done (and gate passed), 1 gate failed, 2 bad input or setup"
        ),
    )
    add_dsn(parser)
    parser.add_argument("--dataset", required=True, type=Path, metavar="DIR", help="BEIR dataset directory")
    parser.add_argument("--embedder", metavar="SPEC",
                        help="embedder spec, e.g. local:multilingual-e5-small (default: the database's space)")
    parser.add_argument("--config", "--configs", action="append", metavar="NAME",
                        help=f"configuration to run; repeat or comma-separate (here: {', '.join(config_names())})")
    parser.add_argument("--reranker", metavar="PATH_OR_NAME",
                        help=f"cross-encoder of {RERANK_CONFIG}: a model directory or a Hugging Face name in the "
                             f"cache (default ${ENV_VAR}, else {FRENCH_MODEL} in the cache; none found: skipped)")
    parser.add_argument("--json", action="store_true", help="print the results as JSON instead of a table")
    parser.add_argument("--limit-queries", type=int, metavar="N", help="evaluate a seeded random sample of N queries")
    parser.add_argument("--seed", type=int, default=0, help="seed of the --limit-queries sample (default 0)")
    parser.add_argument("--out", type=Path, metavar="FILE",
                        help="per-query results, JSON lines (default: .cache/eval/<dataset>.per-query.jsonl)")
    parser.add_argument("--depth", type=int, default=DEFAULT_DEPTH,
                        help=f"chunks each configuration returns per query (default {DEFAULT_DEPTH})")
    parser.add_argument("--chunk-size", type=int, help="chunk size in characters (default: production's)")
    parser.add_argument("--chunk-overlap", type=int, help="chunk overlap in characters (default: production's)")
    gate = parser.add_argument_group("CI gate")
    gate.add_argument("--baseline", type=Path, metavar="FILE",
                      help="baselines file to compare with (eval/baselines.json)")
    gate.add_argument("--suite", metavar="NAME", help="the baseline entry to compare with (e.g. golden, piaf-ci)")
    gate.add_argument("--update-baseline", action="store_true",
                      help="write this run's recall@10 and nDCG@10 as the suite's baseline (on purpose only)")
    gate.add_argument("--gated", action="append", metavar="NAME",
                      help=f"configurations --update-baseline records (default: {', '.join(DEFAULT_GATED)})")
    parser.add_argument("--no-progress", action="store_true", help="no progress bars")
    parser.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    from ragfr.db.connect import connect
    from ragfr.embed import load_embedder, read_space
    from ragfr.errors import ConfigError
    from ragfr.eval import regression
    from ragfr.eval.beir import load_dataset
    from ragfr.eval.report import table, to_json, write_per_query
    from ragfr.eval.runner import resolve_configs, run_eval
    from ragfr.ingest.chunking import ChunkConfig
    from ragfr.retrieval.rerank import resolve_model

    if (args.baseline is None) != (args.suite is None):
        raise ConfigError("--baseline and --suite go together")
    if args.update_baseline and args.baseline is None:
        raise ConfigError("--update-baseline needs --baseline FILE --suite NAME")
    dsn = require_dsn(args)
    dataset = load_dataset(args.dataset)
    configs = resolve_configs([n.strip() for c in (args.config or []) for n in c.split(",") if n.strip()])
    if args.reranker is not None:
        resolve_model(args.reranker)  # an empty name is bad input, not "the default"
        if RERANK_CONFIG not in configs:
            raise ConfigError(f"--reranker is the model of {RERANK_CONFIG}, which this run does not include")
    defaults = ChunkConfig()
    chunking = ChunkConfig(size=args.chunk_size or defaults.size,
                           overlap=defaults.overlap if args.chunk_overlap is None else args.chunk_overlap)
    with connect(dsn) as conn:
        spec = args.embedder or read_space(conn).model
        conn.commit()
        embedder = load_embedder(spec)
        result = run_eval(conn, dsn, dataset, embedder, configs=configs, chunking=chunking,
                          limit_queries=args.limit_queries, seed=args.seed, depth=args.depth,
                          progress=not args.no_progress, reranker=args.reranker)
    out = args.out or Path(".cache") / "eval" / f"{dataset.name}.per-query.jsonl"
    write_per_query(result, out)
    document = to_json(result)
    document["per_query_file"] = str(out)
    print(json.dumps(document, indent=2, ensure_ascii=False) if args.json else table(result))
    print(f"per-query results: {out}", file=sys.stderr)
    if args.baseline is None:
        return 0
    baselines = regression.load_baselines(args.baseline)
    if args.update_baseline:
        regression.update(baselines, args.suite, document, list(args.gated or DEFAULT_GATED))
        args.baseline.write_text(json.dumps(baselines, indent=2, ensure_ascii=False) + "\n", encoding="utf-8")
        print(f"baseline {args.suite!r} written to {args.baseline}", file=sys.stderr)
        return 0
    checks = regression.check(document, baselines, args.suite, args.baseline)
    for item in checks:
        print(f"gate[{args.suite}] {item.line()}", file=sys.stderr)
    failed = [c for c in checks if not c.passed]
    print(f"gate[{args.suite}]: {'FAILED' if failed else 'passed'} ({len(checks) - len(failed)}/{len(checks)} checks)",
          file=sys.stderr)
    return 1 if failed else 0
