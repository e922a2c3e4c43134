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
from tests.support.standins import tiny_cross_encoder, tiny_cross_encoder_cache

from ragfr.cli import build_parser
from ragfr.cli import main as cli_main
from ragfr.embed import load_embedder
from ragfr.errors import ConfigError
from ragfr.filters.grammar import parse_condition
from ragfr.ingest import ChunkConfig, Document, ingest_documents
from ragfr.retrieval.rerank import FRENCH_MODEL

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
    rc = cli_main(["search", "--dsn", dsn, "--lexical-only", *args])
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


def _child(args: list[str], tmp_path: Path, env: dict[str, str] | None = None
           ) -> tuple[subprocess.CompletedProcess[str], dict[str, bool]]:
    """The CLI in a child process: Hugging Face cache in tmp_path/hf (its hub cache _hub(tmp_path) empty unless a
    test fills it: whatever this machine's cache holds never decides a result), SENTENCE_TRANSFORMERS_HOME,
    HF_HUB_CACHE and RAGFR_RERANKER unset unless `env` sets them. Reports which heavy modules the command
    imported."""
    code = (
        "import json, sys\nfrom ragfr.cli import main\nrc = main(sys.argv[1:])\n"
        "print(json.dumps({m: m in sys.modules for m in ('torch', 'sentence_transformers')}))\nsys.exit(rc)\n"
    )
    child_env = {**os.environ, "HF_HOME": str(tmp_path / "hf"), "HF_HUB_OFFLINE": "1"}
    for var in ("RAGFR_RERANKER", "SENTENCE_TRANSFORMERS_HOME", "HF_HUB_CACHE"):
        child_env.pop(var, None)
    child_env.update(env or {})
    proc = subprocess.run([sys.executable, "-c", code, *args], capture_output=True, text=True, env=child_env,
                          timeout=300, check=False)
    return proc, json.loads(proc.stdout.strip().splitlines()[-1])


def _hub(tmp_path: Path) -> Path:
    return tmp_path / "hf" / "hub"


def _no_model_message(cache: Path) -> str:
    return (
        f"ragfr: error: no cross-encoder found: RAGFR_RERANKER is unset and the French cross-encoder "
        f"'ragfr/reranker-fr' is not in the Hugging Face cache {cache} ($SENTENCE_TRANSFORMERS_HOME when set, "
        f"else the hub cache). `make reranker` trains it, then `python -m ragfr_tools.reranker.package --out "
        f"{cache}` puts it in the cache; or set RAGFR_RERANKER or --reranker to a model directory or another "
        "cached name")


def test_search_and_ask_help_say_no_cross_encoder_by_default_and_why(capsys: pytest.CaptureFixture[str]) -> None:
    for command in ("search", "ask"):
        with pytest.raises(SystemExit):
            build_parser().parse_args([command, "--help"])
        out = " ".join(capsys.readouterr().out.split())  # argparse re-wraps option help
        for needle in ("--rerank ", "--no-rerank", 'docs/retrieval-quality.md, "Cross-encoder"', "ranks below RRF",
                       "$RAGFR_RERANKER", FRENCH_MODEL, "make reranker",
                       "Hugging Face cache"):
            assert needle in out, (command, needle)
        assert "ms-marco" not in out


@pytest.mark.parametrize("command", ["search", "ask"])
def test_rerank_and_no_rerank_exclude_each_other(command: str, capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as exited:
        build_parser().parse_args([command, "--collection", "c", "--rerank", "--no-rerank", "q"])
    assert exited.value.code == 2
    assert "argument --no-rerank: not allowed with argument --rerank" in capsys.readouterr().err


def test_default_search_neither_reranks_nor_loads_a_model(kb, tmp_path: Path) -> None:
    """No flag: the fused order, no cross-encoder imported, even with RAGFR_RERANKER naming a model that
    does not exist (the variable chooses the model of --rerank; it does not turn reranking on)."""
    for extra in ([], ["--no-rerank"]):
        proc, imported = _child(["search", "--dsn", kb, "--collection", "contrat", "--json", *extra, "franchise"],
                                tmp_path, env={"RAGFR_RERANKER": str(tmp_path / "absent-model")})
        assert proc.returncode == 0, proc.stderr
        out = json.loads(proc.stdout.strip().rsplit("\n{", 1)[0])
        assert out["results"] and all(h["rerank_score"] is None for h in out["results"])
        assert out["settings"]["reranker"] is None
        assert imported == {"torch": False, "sentence_transformers": False}


def test_rerank_without_a_model_says_where_it_looked_before_any_model_load(kb, tmp_path: Path) -> None:
    for command in ("search", "ask"):
        proc, imported = _child([command, "--dsn", kb, "--collection", "contrat", "--rerank", "franchise"], tmp_path)
        assert proc.returncode == 2, proc.stderr
        assert proc.stderr.strip() == _no_model_message(_hub(tmp_path))
        assert imported == {"torch": False, "sentence_transformers": False}
    # In the hub cache but SENTENCE_TRANSFORMERS_HOME set: the load would read that folder, so the check does too.
    tiny_cross_encoder_cache(_hub(tmp_path), FRENCH_MODEL)
    st_home = tmp_path / "st-home"
    proc, imported = _child(["search", "--dsn", kb, "--collection", "contrat", "--rerank", "franchise"], tmp_path,
                            env={"SENTENCE_TRANSFORMERS_HOME": str(st_home)})
    assert proc.returncode == 2 and proc.stderr.strip() == _no_model_message(st_home)
    assert imported == {"torch": False, "sentence_transformers": False}


def test_a_named_model_missing_from_the_cache_is_refused_before_any_model_load(kb, tmp_path: Path) -> None:
    """ms-marco is no default any more but stays usable by name; absent from the offline cache, it is refused."""
    name = "cross-encoder/ms-marco-MiniLM-L-6-v2"
    for args, env in ((["--reranker", name], {}), ([], {"RAGFR_RERANKER": name})):
        proc, imported = _child(["search", "--dsn", kb, "--collection", "contrat", "--rerank", *args, "franchise"],
                                tmp_path, env=env)
        assert proc.returncode == 2
        err = proc.stderr.strip()
        assert err.startswith(f"ragfr: error: reranker '{name}' could not be loaded from "
                              f"the Hugging Face cache ({_hub(tmp_path)}) — offline: ") and "\n" not in err
        assert err.endswith("Pre-cache the model (docs/runbooks/air-gapped-install.md) or search without --rerank")
        assert imported == {"torch": False, "sentence_transformers": False}


def test_reranker_without_rerank_is_refused(kb, capsys) -> None:
    rc = cli_main(["search", "--dsn", kb, "--collection", "contrat", "--reranker", "acme/ce", "franchise"])
    assert rc == 2 and capsys.readouterr().err.strip() == (
        "ragfr: error: --reranker names the cross-encoder of --rerank; add --rerank (reranking is off by default)")
    rc = cli_main(["search", "--dsn", kb, "--collection", "contrat", "--rerank", "--reranker", " ", "franchise"])
    assert rc == 2 and "empty --reranker" in capsys.readouterr().err


def test_rerank_uses_the_model_directory_given_else_ragfr_reranker(kb, tmp_path: Path, capsys, monkeypatch) -> None:
    """--rerank --reranker DIR reranks with DIR; without --reranker, $RAGFR_RERANKER is the model, in `ask` too.
    STAND-IN weights (tests/support/standins.py): what is checked is which model scored the hits, never the order."""
    given, from_env = tiny_cross_encoder(tmp_path / "given"), tiny_cross_encoder(tmp_path / "env")
    monkeypatch.setenv("RAGFR_RERANKER", str(from_env))
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    monkeypatch.delenv("RAGFR_GATE_CE_EVIDENCE", raising=False)
    for args, model in ((["--reranker", str(given)], given), ([], from_env)):
        rc = cli_main(["search", "--dsn", kb, "--collection", "contrat", "--rerank", *args, "--json", "franchise vol"])
        out = json.loads(capsys.readouterr().out)
        assert rc == 0 and out["settings"]["reranker"] == str(model)
        assert len(out["results"]) == 2 and all(h["rerank_score"] is not None for h in out["results"])

    class Forbidden:
        def chat(self, model: str, messages: list[dict[str, str]]) -> str:
            raise AssertionError("the chat model must not be called below the evidence threshold")

    monkeypatch.setattr("ragfr.cli.ask._chat_client", lambda timeout: Forbidden())
    rc = cli_main(["ask", "--dsn", kb, "--collection", "contrat", "--rerank", "--json", "recette de la tarte tatin"])
    out = json.loads(capsys.readouterr().out)
    assert rc == 3 and out["grounded"] is False
    assert out["evidence"]["scale"] == "rrf"  # reranked, but no calibrated cross-encoder threshold is set


def test_rerank_by_hugging_face_name_from_the_cache(kb, tmp_path: Path) -> None:
    """A model named like ms-marco, found in the offline cache (HF_HOME/hub): loaded by name and used."""
    name = "cross-encoder/ms-marco-MiniLM-L-6-v2"
    tiny_cross_encoder_cache(_hub(tmp_path), name, words=("franchise", "vol"))
    proc, imported = _child(["search", "--dsn", kb, "--collection", "contrat", "--rerank", "-k", "1", "--json",
                             "franchise"], tmp_path, env={"RAGFR_RERANKER": name})
    assert proc.returncode == 0, proc.stderr
    out = json.loads(proc.stdout.strip().rsplit("\n{", 1)[0])
    assert out["settings"]["reranker"] == name and imported["sentence_transformers"]
    assert len(out["results"]) == 1 and out["results"][0]["rerank_score"] is not None


@pytest.mark.parametrize("where", ["HF_HOME", "SENTENCE_TRANSFORMERS_HOME"])
def test_rerank_defaults_to_the_french_model_from_the_cache(kb, tmp_path: Path, where: str) -> None:
    """No --reranker, no RAGFR_RERANKER: ragfr/reranker-fr, by name, from the cache the load reads (the hub
    cache under HF_HOME, or SENTENCE_TRANSFORMERS_HOME when set), as the ragfr/reranker image and `make up
    UP_RERANKER=` lay it out for Open WebUI. STAND-IN weights: which model scored, never the order."""
    env = {}
    cache = _hub(tmp_path)
    if where == "SENTENCE_TRANSFORMERS_HOME":
        cache = tmp_path / "st-home"
        env = {where: str(cache)}
    tiny_cross_encoder_cache(cache, FRENCH_MODEL, words=("franchise", "vol"))
    proc, imported = _child(["search", "--dsn", kb, "--collection", "contrat", "--rerank", "--json", "franchise vol"],
                            tmp_path, env=env)
    assert proc.returncode == 0, proc.stderr
    out = json.loads(proc.stdout.strip().rsplit("\n{", 1)[0])
    assert out["settings"]["reranker"] == FRENCH_MODEL and imported["sentence_transformers"]
    assert len(out["results"]) == 2 and all(h["rerank_score"] is not None for h in out["results"])


@pytest.mark.parametrize("where", ["HF_HOME", "SENTENCE_TRANSFORMERS_HOME"])
def test_reranker_present_in_the_cache_passes_the_check(tmp_path: Path, where: str) -> None:
    hub = tmp_path / "hub" if where == "HF_HOME" else tmp_path
    repo = hub / "models--acme--tiny-ce"
    (repo / "refs").mkdir(parents=True)
    (repo / "refs" / "main").write_text("0" * 40)
    (repo / "snapshots" / ("0" * 40)).mkdir(parents=True)
    (repo / "snapshots" / ("0" * 40) / "config.json").write_text("{}")
    code = "from ragfr.retrieval.rerank import require_reranker_files as r; r('acme/tiny-ce'); print('ok')"
    env = {k: v for k, v in os.environ.items() if k not in ("HF_HUB_CACHE", "SENTENCE_TRANSFORMERS_HOME")}
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60, check=False,
                          env={**env, "HF_HOME": str(tmp_path / "elsewhere"), where: str(tmp_path),
                               "HF_HUB_OFFLINE": "1"})
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


def test_json_gives_each_passage_the_relevance_the_chat_shows(kb, capsys) -> None:
    """Issue 47 item 5: `relevance` is the fitted gate's p for the top passage, scaled by the fused score down the
    list (ragfr.gate.relevance), in [0, 1] and never rising; the chat hands the same value to Open WebUI."""
    from ragfr.gate import fitted

    rc = cli_main(["search", "--dsn", kb, "--collection", "contrat", "--json", "Dans quel délai déclarer un vol ?"])
    captured = capsys.readouterr()
    assert rc == 0, captured.err
    out = json.loads(captured.out)
    hits = out["results"]
    assert hits and hits[0]["metadata"]["name"] == "b.txt", hits
    gate = fitted.load(E5)
    assert gate is not None
    p = gate.probability(out["evidence"])
    values = [h["relevance"] for h in hits]
    assert values[0] == pytest.approx(p)
    assert values == pytest.approx([p * h["rrf_score"] / hits[0]["rrf_score"] for h in hits])
    assert all(0.0 <= v <= 1.0 for v in values) and values == sorted(values, reverse=True), values
    assert {"rrf_score", "lexical_rank", "semantic_rank"} <= set(hits[0])  # the earlier fields stay
    rc = cli_main(["search", "--dsn", kb, "--collection", "contrat", "Dans quel délai déclarer un vol ?"])
    assert rc == 0 and f" relevance={100 * values[0]:.2f}%]" in capsys.readouterr().out
