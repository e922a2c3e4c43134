"""`ragfr datasets`: convert public question-answering sets into the BEIR layout `ragfr eval` reads."""

from __future__ import annotations

import argparse
from pathlib import Path

from ragfr.errors import ConfigError
from ragfr.eval.beir import write_dataset
from ragfr.eval.piaf import PIAF_V11_SHA256, load_piaf, piaf_to_beir


def register(subparsers: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    parser = subparsers.add_parser(
        "datasets",
        help="convert evaluation datasets (PIAF) to the BEIR layout",
        description="Convert evaluation datasets to the BEIR layout used by `ragfr eval`.",
    )
    kinds = parser.add_subparsers(dest="kind", metavar="KIND", required=True)
    piaf = kinds.add_parser(
        "piaf",
        help="PIAF v1.1 (SQuAD layout) -> BEIR",
        formatter_class=argparse.RawDescriptionHelpFormatter,
        description=(
            "Convert PIAF v1.1 (French SQuAD-style QA) to BEIR: every paragraph becomes a document\n"
            "(id piaf-<16 hex of sha256(title, text)>, stable across runs), every question a query whose\n"
            "one relevant document (grade 1) is its paragraph. The source's sha256 is checked first.\n\n"
            "Writes OUT/corpus.jsonl, OUT/queries.jsonl and OUT/qrels/test.tsv."
        ),
        epilog=(
            "examples:\n"
            "  ragfr datasets piaf ../shared/datasets/piaf/piaf-v1.1.json .cache/piaf\n"
            "  ragfr datasets piaf SRC .cache/piaf-ci --articles 12 --seed 7   # small CI subset"
        ),
    )
    piaf.add_argument("src", metavar="SRC", type=Path, help="piaf-v1.1.json")
    piaf.add_argument("out", metavar="OUT", type=Path, help="output directory (created)")
    piaf.add_argument("--articles", type=int, metavar="N",
                      help="keep a seeded random sample of N whole articles (their paragraphs and questions)")
    piaf.add_argument("--seed", type=int, default=0, help="sampling seed for --articles (default 0)")
    piaf.add_argument("--sha256", default=PIAF_V11_SHA256,
                      help="expected sha256 of SRC (default: PIAF v1.1's); 'skip' disables the check")
    piaf.set_defaults(func=_piaf)


def _piaf(args: argparse.Namespace) -> int:
    expected = None if args.sha256 == "skip" else args.sha256
    if args.out.exists() and not args.out.is_dir():
        raise ConfigError(f"{args.out}: exists and is not a directory")
    source = load_piaf(args.src, expected_sha256=expected)
    dataset = piaf_to_beir(source, articles=args.articles, seed=args.seed)
    write_dataset(dataset, args.out)
    print(f"{args.out}: {len(dataset.corpus)} documents, {len(dataset.queries)} queries, "
          f"{sum(len(j) for j in dataset.qrels.values())} qrels")
    return 0
