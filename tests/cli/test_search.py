"""What an operator hits probing `ragfr search` by hand (issue 17): every malformed filter, impossible date,
empty embedder or unknown collection is one clear error line, never a silently different search."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import psycopg
import pytest

from ragfr.cli import build_parser
from ragfr.cli import main as cli_main
from ragfr.db.filters import parse_condition
from ragfr.embed import load_embedder
from ragfr.errors import ConfigError
from ragfr.ingest import ChunkConfig, Document, ingest_documents

E5 = "local:multilingual-e5-small"


def test_filter_grammar_and_examples_are_in_search_help(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit):
        build_parser().parse_args(["search", "--help"])
    out = capsys.readouterr().out
    for needle in ("filter grammar", "KEY=A|B|C", "2023-13-45", 'titre="a|b"', "--filter 'date<2024-07-01'",
                   "unknown collection"):
        assert needle in out, needle


@pytest.mark.parametrize(
    ("expr", "message"),
    [
        (">=5", "has no key before its operator"),
        ("=5", "has no key before its operator"),
        ("a==b", "'==' is not an operator"),
        ("a=>5", "'=>' is not an operator"),
        ("a<>5", "'<>' is not an operator"),
        ("a!5", "'!5' is not an operator"),
        ("annee", "no operator"),
        ("a>=1|2", "a range takes one value"),
        ('a="x', "unterminated or invalid quoted value"),
        ('a="x" y', "unexpected"),
    ],
)
def test_malformed_operators_are_errors_not_other_filters(expr: str, message: str) -> None:
    with pytest.raises(ConfigError, match=message):
        parse_condition(expr)


@pytest.mark.parametrize("expr", ["date>=2023-13-45", "date<2023-02-30", "date<=2024-04-31T10:00", "d>2023-00-10"])
def test_impossible_dates_are_refused(expr: str) -> None:
    with pytest.raises(ConfigError, match="is not a valid ISO date"):
        parse_condition(expr)


@pytest.mark.parametrize(
    ("expr", "key", "op", "values"),
    [
        ("titre=a<b", "titre", "eq", ("a<b",)),
        ("titre=x>=y", "titre", "eq", ("x>=y",)),
        ("note=a!=b", "note", "eq", ("a!=b",)),
        ('titre="a|b"|c', "titre", "in", ("a|b", "c")),
        ('note="=5"', "note", "eq", ("=5",)),
        ('"prix<ht"<=100', "prix<ht", "lte", ("100",)),
        (' produit = auto | habitation ', "produit", "in", ("auto", "habitation")),
        ("date>=2024-02-29", "date", "gte", ("2024-02-29",)),
    ],
)
def test_values_with_operator_characters_parse_as_written(expr: str, key: str, op: str, values: tuple[str, ...]) -> None:
    c = parse_condition(expr)
    assert (c.key, c.op, c.values) == (key, op, values)


@pytest.fixture
def kb(migrated_db):
    dsn = migrated_db(dims=384, model=E5)
    docs = [
        Document(text="La franchise est de 150 euros par sinistre.", source="a.txt", metadata={"titre": "a<b"}),
        Document(text="Le vol doit être déclaré sous 48 heures.", source="b.txt", metadata={"titre": "a|b"}),
    ]
    with psycopg.connect(dsn, autocommit=True) as conn:
        ingest_documents(conn, "contrat", docs, load_embedder(E5, cache=False), ChunkConfig(size=1000, overlap=0),
                         progress=False)
    return dsn


def _search(capsys: pytest.CaptureFixture[str], dsn: str, *args: str) -> tuple[int, str, str]:
    rc = cli_main(["search", "--dsn", dsn, "--no-rerank", "--lexical-only", *args])
    captured = capsys.readouterr()
    return rc, captured.out, captured.err


def test_values_with_operator_characters_match_stored_rows(kb, capsys) -> None:
    for expr, name in (("titre=a<b", "a.txt"), ('titre="a|b"', "b.txt")):
        rc, out, err = _search(capsys, kb, "--collection", "contrat", "--json", "--filter", expr, "franchise vol")
        assert rc == 0, err
        assert [h["metadata"]["name"] for h in json.loads(out)["results"]] == [name]


def test_unknown_collection_is_exit_2_and_an_empty_match_is_exit_0(kb, capsys) -> None:
    rc, out, err = _search(capsys, kb, "--collection", "contrats", "franchise")
    assert rc == 2 and out == ""
    assert err.strip() == ("ragfr: error: unknown collection 'contrats': no chunk is stored under that name "
                           "(collections: contrat)")
    rc, out, err = _search(capsys, kb, "--collection", "contrat", "--filter", "titre=zzz", "franchise")
    assert rc == 0 and out.startswith("no result") and err == ""


def test_empty_embedder_is_refused(kb, capsys) -> None:
    rc, out, err = _search(capsys, kb, "--collection", "contrat", "--embedder", "", "franchise")
    assert rc == 2 and "empty embedder spec" in err and out == ""


def _without_reranker(args: list[str], hf_home: Path) -> tuple[subprocess.CompletedProcess[str], dict[str, bool]]:
    """The CLI in a child process with an empty Hugging Face cache; reports which heavy modules it imported."""
    code = (
        "import json, sys\nfrom ragfr.cli import main\nrc = main(sys.argv[1:])\n"
        "print(json.dumps({m: m in sys.modules for m in ('torch', 'sentence_transformers')}))\nsys.exit(rc)\n"
    )
    env = {**os.environ, "HF_HOME": str(hf_home), "HF_HUB_OFFLINE": "1"}
    env.pop("RAGFR_RERANKER", None)
    proc = subprocess.run([sys.executable, "-c", code, *args], capture_output=True, text=True, env=env, timeout=120,
                          check=False)
    return proc, json.loads(proc.stdout.strip().splitlines()[-1])


def test_missing_reranker_is_refused_before_any_model_load(kb, tmp_path: Path) -> None:
    proc, imported = _without_reranker(["search", "--dsn", kb, "--collection", "contrat", "franchise"], tmp_path)
    assert proc.returncode == 2
    err = proc.stderr.strip()
    assert err.startswith("ragfr: error: reranker 'cross-encoder/ms-marco-MiniLM-L-6-v2' could not be loaded from "
                          "the Hugging Face cache (HF_HOME) — offline: ") and "\n" not in err
    assert err.endswith("Pre-cache the model (see docs/install.md, air-gapped install) or run with --no-rerank")
    assert imported == {"torch": False, "sentence_transformers": False}


def test_reranker_present_in_the_cache_passes_the_check(tmp_path: Path) -> None:
    repo = tmp_path / "hub" / "models--acme--tiny-ce"
    (repo / "refs").mkdir(parents=True)
    (repo / "refs" / "main").write_text("0" * 40)
    (repo / "snapshots" / ("0" * 40)).mkdir(parents=True)
    (repo / "snapshots" / ("0" * 40) / "config.json").write_text("{}")
    code = "from ragfr.retrieval.rerank import require_reranker_files as r; r('acme/tiny-ce'); print('ok')"
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60, check=False,
                          env={**os.environ, "HF_HOME": str(tmp_path), "HF_HUB_OFFLINE": "1"})
    assert proc.stdout.strip() == "ok", proc.stderr


def test_ef_search_is_auto_by_default_pinned_on_request_and_checked(kb, capsys) -> None:
    rc, out, _ = _search(capsys, kb, "--collection", "contrat", "franchise")
    assert rc == 0 and "(ef_search=100 (graph size) " in out, out
    rc, out, _ = _search(capsys, kb, "--collection", "contrat", "--ef-search", "64", "franchise")
    assert rc == 0 and "(ef_search=64 (pinned) " in out, out
    for bad in ("0", "cent"):
        with pytest.raises(SystemExit) as exited:
            _search(capsys, kb, "--collection", "contrat", "--ef-search", bad, "franchise")
        assert exited.value.code == 2
        assert f"ef_search must be 'auto' or an integer from 1 to 1000 (pgvector's limit), got '{bad}'" in (
            capsys.readouterr().err)
