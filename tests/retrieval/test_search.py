"""ragfr's hybrid search end to end on the real database with the real offline e5 embedder."""

from __future__ import annotations

import json
import math
import random
import socket
from collections import Counter
from pathlib import Path

import psycopg
import pytest
from tests.support.contract import CONTRACT_ARTICLES, E5
from tests.support.geometry import insert
from tests.support.lexidx import block_problems, indexed_postings, recounted_postings
from tests.support.standins import tiny_cross_encoder

from ragfr.analysis.french import analyze, query_terms
from ragfr.ask import answer
from ragfr.cli import main as cli_main
from ragfr.embed import load_embedder
from ragfr.errors import ConfigError, EmbeddingSpaceError, RagfrError
from ragfr.filters.grammar import Condition, parse_condition
from ragfr.ingest import ChunkConfig, Document, ingest_documents
from ragfr.retrieval.config import SearchConfig
from ragfr.retrieval.hybrid import search
from ragfr.retrieval.rerank import load_reranker

DOCS = CONTRACT_ARTICLES
NO_RERANK = SearchConfig(k=5, rerank=False)


@pytest.fixture(scope="module")
def e5():
    return load_embedder(E5, cache=False)


@pytest.fixture
def kb(migrated_db, e5):
    dsn = migrated_db(dims=384, model=E5)
    with psycopg.connect(dsn, autocommit=True) as conn:
        docs = [Document(text=t, source=f"{name}.txt", metadata={"produit": "habitation" if i % 2 else "auto"})
                for i, (name, t) in enumerate(DOCS.items())]
        ingest_documents(conn, "contrat", docs, e5, ChunkConfig(size=1000, overlap=0), progress=False)
        yield dsn, conn


def _names(result) -> list[str]:
    return [h.metadata["name"].removesuffix(".txt") for h in result.hits]


@pytest.mark.parametrize("query", ["sinistres", "Sinistre", "Comment déclarer un sinistre à l'assureur ?"])
def test_inflected_french_queries_find_the_sinistre_chunk(kb, e5, query: str) -> None:
    _, conn = kb
    result = search(conn, query, collections=["contrat"], embedder=e5, config=NO_RERANK)
    assert _names(result)[0] == "declaration"
    assert result.hits[0].ranks.get("lexical") == 1
    lexical_only = search(conn, query, collections=["contrat"], config=NO_RERANK.with_(semantic=False))
    assert _names(lexical_only)[0] == "declaration"


def test_accents_omitted_still_match(kb) -> None:
    _, conn = kb
    result = search(conn, "resiliation preavis echeance", collections=["contrat"], config=NO_RERANK.with_(semantic=False))
    assert _names(result)[0] == "resiliation"


def test_any_term_matches_not_all(kb) -> None:
    """Stock Open WebUI requires every word; a natural question then matches nothing."""
    _, conn = kb
    q = "Quelle est la franchise appliquée quand mon appartement est cambriolé ?"
    assert _names(search(conn, q, collections=["contrat"], config=NO_RERANK.with_(semantic=False)))[0] == "franchise"
    stock = conn.execute(
        "SELECT count(*) FROM document_chunk WHERE to_tsvector('simple', text) @@ plainto_tsquery('simple', %s)", (q,)
    ).fetchone()
    assert stock == (0,)


def test_bm25_scores_equal_a_reference_computation(kb) -> None:
    _, conn = kb
    rows = conn.execute("SELECT id, text FROM document_chunk WHERE collection_name = 'contrat'").fetchall()
    docs = {i: analyze(t) for i, t in rows}
    n, avgdl = len(docs), sum(map(len, docs.values())) / len(docs)
    q = "délai de déclaration du sinistre et franchise"
    terms = query_terms(q)
    k1, b = 1.2, 0.75
    expected = {}
    for doc_id, lexemes in docs.items():
        tf = Counter(lexemes)
        score = 0.0
        for t in terms:
            df = sum(1 for d in docs.values() if t in d)
            if tf[t]:
                idf = math.log(1 + (n - df + 0.5) / (df + 0.5))
                score += idf * tf[t] * (k1 + 1) / (tf[t] + k1 * (1 - b + b * len(lexemes) / avgdl))
        if score:
            expected[doc_id] = score
    # Both strategies of the arm: postings (no metadata condition) and filter-first (a condition every
    # chunk passes, so the candidate set is the same).
    everything = [parse_condition("produit=habitation|auto")]
    for conditions, strategy in (([], "bm25"), (everything, "bm25-filter-first")):
        result = search(conn, q, collections=["contrat"], conditions=conditions,
                        config=NO_RERANK.with_(semantic=False, k=10))
        assert result.arms["lexical"].strategy == strategy
        got = {h.id: h.scores.get("lexical") for h in result.hits}
        assert got.keys() == expected.keys()
        for doc_id, score in expected.items():
            assert got[doc_id] == pytest.approx(score, rel=1e-9)


def test_bm25_statistics_stay_exact_under_stock_writes(migrated_db) -> None:
    """Inserts, Open WebUI-style upserts, collection moves, deletes: stats always equal a recount."""
    rng = random.Random(1)
    words = "sinistre assureur franchise délai garantie exclusion vol incendie prime contrat".split()
    with psycopg.connect(migrated_db(dims=3, model="ollama:test"), autocommit=True) as conn:
        def text() -> str:
            return " ".join(rng.choice(words) for _ in range(rng.randint(1, 12)))

        for step in range(60):
            op = rng.choice(["insert", "insert", "upsert", "move", "meta", "delete", "truncate" if step == 30 else "insert"])
            i = f"id{rng.randint(0, 25)}"
            c = rng.choice(["a", "b"])
            if op == "insert":
                conn.execute("INSERT INTO document_chunk (id, vector, collection_name, text) VALUES (%s, '[1,0,0]', %s, %s)"
                             " ON CONFLICT (id) DO NOTHING", (i, c, text()))
            elif op == "upsert":  # what PgvectorClient.upsert with pgcrypto does
                conn.execute("INSERT INTO document_chunk (id, vector, collection_name, text) VALUES (%s, '[0,1,0]', %s, %s)"
                             " ON CONFLICT (id) DO UPDATE SET vector = EXCLUDED.vector, collection_name ="
                             " EXCLUDED.collection_name, text = EXCLUDED.text", (i, c, text()))
            elif op == "meta":  # no text change: postings must not churn, and must stay right
                conn.execute("UPDATE document_chunk SET vmetadata = '{\"x\": 1}' WHERE id = %s", (i,))
            elif op == "move":
                conn.execute("UPDATE document_chunk SET collection_name = %s WHERE id = %s", (c, i))
            elif op == "delete":
                conn.execute("DELETE FROM document_chunk WHERE collection_name = %s AND id < %s", (c, i))
            else:
                conn.execute("TRUNCATE document_chunk")
            stats = set(conn.execute("SELECT collection_name, lexeme, df FROM ragfr_term_stats").fetchall())
            recount = set(conn.execute(
                "SELECT collection_name, u.lexeme, count(*) FROM document_chunk, unnest(fts) u GROUP BY 1, 2").fetchall())
            assert stats == recount, f"term stats drifted after {op}"
            coll = set(conn.execute("SELECT collection_name, n_docs, total_len FROM ragfr_collection_stats").fetchall())
            recount_c = set(conn.execute(
                "SELECT collection_name, count(*), sum(fts_len) FROM document_chunk GROUP BY 1").fetchall())
            assert coll == recount_c, f"collection stats drifted after {op}"
            assert indexed_postings(conn) == recounted_postings(conn), f"postings drifted after {op}"
            assert block_problems(conn) == [], f"block index broken after {op}"


def test_updates_that_keep_the_text_do_not_lock_the_bm25_statistics(migrated_db) -> None:
    """An embedding backfill (vector only) or a metadata edit must not hold the term-statistics rows of the
    chunk's lexemes until it commits, or every concurrent upload sharing a term queues behind it
    (migrations/0007). A text change still must."""
    dsn = migrated_db(dims=3, model="ollama:test")
    with psycopg.connect(dsn, autocommit=True) as writer, psycopg.connect(dsn, autocommit=True) as other:
        writer.execute("INSERT INTO document_chunk (id, vector, collection_name, text) VALUES"
                       " ('a', '[1,0,0]', 'c', 'sinistre déclaré à l''assureur')")
        # Every statistics row of the chunk as first written; the text change drops one of them.
        lock_probe = "SELECT lexeme FROM ragfr_term_stats ORDER BY lexeme FOR UPDATE NOWAIT"
        lexemes = other.execute(lock_probe).fetchall()
        for change in ("vector = '[0,1,0]'", "vmetadata = '{\"x\": 1}'", "text = 'sinistre et franchise'"):
            with writer.transaction():
                writer.execute(f"UPDATE document_chunk SET {change} WHERE id = 'a'")
                if change.startswith("text"):
                    with pytest.raises(psycopg.errors.LockNotAvailable):
                        other.execute(lock_probe)
                else:
                    assert other.execute(lock_probe).fetchall() == lexemes, f"UPDATE SET {change} locked the stats"
        df = dict(writer.execute("SELECT lexeme, df FROM ragfr_term_stats").fetchall())
        assert df == {"sinistr": 1, "et": 1, "franchis": 1}  # stop words are dropped on the query side only
        assert writer.execute("SELECT n_docs, total_len FROM ragfr_collection_stats").fetchall() == [(1, 3)]
        options = writer.execute("SELECT reloptions FROM pg_class WHERE relname = 'ragfr_lex_blocks'").fetchone()
        assert options is not None and "autovacuum_vacuum_insert_scale_factor=0.01" in options[0]


def test_same_query_twenty_times_same_ids_and_order_including_ties(migrated_db) -> None:
    # Four chunks each found by exactly one arm at rank 1 or 2 -> pairwise tied RRF scores; only the id
    # tie-break orders them.
    with psycopg.connect(migrated_db(dims=3, model="ollama:test"), autocommit=True) as conn:
        insert(conn, [
            ("z-lex", [0.0, 0.0, 1.0], "kb", "sinistre", {}),
            ("a-lex", [0.0, 0.1, 0.99], "kb", "sinistre sinistre autre", {}),
            ("m-sem", [1.0, 0.0, 0.0], "kb", "rien", {}),
            ("b-sem", [0.99, 0.1, 0.0], "kb", "nada", {}),
        ])
        cfg = NO_RERANK.with_(similarity_floor=0.5)
        runs = [[(h.id, h.rrf_score) for h in search(conn, "sinistre", collections=["kb"], query_vector=[1, 0, 0],
                                                     config=cfg).hits] for _ in range(20)]
    assert all(r == runs[0] for r in runs)
    ids = [i for i, _ in runs[0]]
    scores = [s for _, s in runs[0]]
    assert scores[0] == scores[1] and scores[2] == scores[3]  # the ties exist
    assert ids[:2] == sorted(ids[:2]) and ids[2:] == sorted(ids[2:])


def test_embedder_of_another_space_is_refused(kb) -> None:
    _, conn = kb
    use = load_embedder("local:use-multilingual", cache=False)
    with pytest.raises(EmbeddingSpaceError, match="does not match the stored embedding space"):
        search(conn, "sinistre", collections=["contrat"], embedder=use, config=NO_RERANK)
    with pytest.raises(EmbeddingSpaceError, match="never padded"):
        search(conn, "sinistre", collections=["contrat"], query_vector=[0.1] * 383, config=NO_RERANK)


BAD_QUERIES = ["", "   \n\t ", "x" * 100_000, "sinistre\x00 drop"]
ODD_QUERIES = [
    "le la les de des",  # only stop words
    "& | ! : * ( ) ' \\",  # tsquery operators
    "sinistre & franchise | !vol:* ('a'",
    "'; DROP TABLE document_chunk; --",
    "%s %(x)s {}",
]


@pytest.mark.parametrize("query", BAD_QUERIES, ids=["empty", "whitespace", "100KB", "NUL"])
def test_bad_queries_are_clear_errors(kb, e5, query: str) -> None:
    _, conn = kb
    with pytest.raises(ConfigError):
        search(conn, query, collections=["contrat"], embedder=e5, config=NO_RERANK)
    assert search(conn, "sinistre", collections=["contrat"], embedder=e5, config=NO_RERANK).hits  # still usable


@pytest.mark.parametrize("query", ODD_QUERIES)
def test_odd_queries_give_correct_results_without_errors(kb, e5, query: str) -> None:
    _, conn = kb
    lexical = search(conn, query, collections=["contrat"], config=NO_RERANK.with_(semantic=False))
    expected_terms = query_terms(query)
    for h in lexical.hits:
        assert set(analyze(h.text)) & set(expected_terms)
    hybrid = search(conn, query, collections=["contrat"], embedder=e5, config=NO_RERANK)
    assert len(hybrid.hits) == 5  # the vector arm always answers
    assert conn.execute("SELECT count(*) FROM document_chunk").fetchone() == (6,)


@pytest.mark.parametrize("collection", ["'; DROP TABLE document_chunk; --", "contrat' OR '1'='1", "x\\y%_"])
def test_injection_in_collection_names_and_filters_is_inert(kb, e5, collection: str) -> None:
    _, conn = kb
    assert search(conn, "sinistre", collections=[collection], embedder=e5, config=NO_RERANK).hits == []
    evil = [Condition("produit') OR 1=1 --", "eq", ("x",)), Condition("produit", "eq", ("' OR '1'='1",))]
    for cond in evil:
        assert search(conn, "sinistre", collections=["contrat"], conditions=[cond], embedder=e5, config=NO_RERANK).hits == []
    assert conn.execute("SELECT count(*) FROM document_chunk").fetchone() == (6,)


def test_unknown_filter_key_is_an_empty_result_and_nul_is_refused(kb, e5) -> None:
    _, conn = kb
    cond = [parse_condition("no_such_key=1")]
    assert search(conn, "sinistre", collections=["contrat"], conditions=cond, embedder=e5, config=NO_RERANK).hits == []
    for bad in (lambda: parse_condition("produit=a\x00b"), lambda: parse_condition("=x"), lambda: parse_condition("k>abc")):
        with pytest.raises(ConfigError):
            bad()


def test_filters_restrict_both_arms(kb, e5) -> None:
    _, conn = kb
    result = search(conn, "sinistre", collections=["contrat"], conditions=[parse_condition("produit=auto")],
                    embedder=e5, config=NO_RERANK)
    assert result.hits and all(h.metadata["produit"] == "auto" for h in result.hits)


def test_settings_are_returned_with_every_result(kb, e5) -> None:
    _, conn = kb
    s = search(conn, "vol", collections=["contrat"], embedder=e5, config=NO_RERANK.with_(ef_search=77)).settings
    assert (s["ef_search"], s["iterative_scan"], s["rrf_k"], s["embedding_model"]) == (77, "relaxed_order", 60, E5)
    # SET LOCAL: nothing leaks into the session afterwards.
    assert conn.execute("SELECT current_setting('hnsw.ef_search')").fetchone() == ("40",)


def test_no_statement_of_a_search_is_jit_compiled(kb, e5, monkeypatch) -> None:
    """JIT is off in both arms' transactions, on one connection and on two, even where the server would
    compile everything (jit_above_cost 0): compiling costs more than a retrieval statement runs."""
    from ragfr.retrieval import lexical

    dsn, conn = kb
    seen: list[str] = []
    real_bm25 = lexical.bm25

    def spying_bm25(arm_conn, *args, **kwargs):
        seen.append(arm_conn.execute("SELECT current_setting('jit')").fetchone()[0])
        return real_bm25(arm_conn, *args, **kwargs)

    monkeypatch.setattr(lexical, "bm25", spying_bm25)
    conn.execute("SET jit = on")
    conn.execute("SET jit_above_cost = 0")
    with psycopg.connect(dsn, autocommit=True) as second:
        second.execute("SET jit = on")
        second.execute("SET jit_above_cost = 0")
        one = search(conn, "sinistre", collections=["contrat"], embedder=e5, config=NO_RERANK)
        two = search(conn, "sinistre", collections=["contrat"], embedder=e5, config=NO_RERANK, lexical_conn=second)
        assert second.execute("SELECT current_setting('jit')").fetchone() == ("on",)  # SET LOCAL only
    assert one.settings["jit"] == two.settings["jit"] == "off"
    assert seen == ["off", "off"]
    assert conn.execute("SELECT current_setting('jit')").fetchone() == ("on",)


class _Chat:
    def __init__(self) -> None:
        self.calls = 0

    def chat(self, model: str, messages: list[dict[str, str]]) -> str:
        self.calls += 1
        return "Il faut déclarer le sinistre sous cinq jours ouvrés [" + messages[1]["content"].split("[")[1].split("]")[0] + "]."


def test_ask_below_threshold_makes_no_model_call(kb, e5) -> None:
    _, conn = kb
    chat = _Chat()
    off_topic = search(conn, "recette de la tarte tatin aux pommes caramélisées", collections=["contrat"], embedder=e5,
                       config=NO_RERANK)
    out = answer(off_topic, chat, "test-model")
    assert not out.grounded and out.answer is None and chat.calls == 0
    assert out.evidence.top_score is not None and out.evidence.top_score < out.evidence.evidence_threshold
    # the reason names the threshold missed: the fitted evidence gate's (e5 ships one) or the rank rule's
    assert out.evidence.rule == "evidence" and "below the caution threshold" in out.to_json()["evidence"]["reason"]
    grounded = answer(search(conn, "délai pour déclarer un sinistre", collections=["contrat"], embedder=e5,
                             config=NO_RERANK), chat, "test-model")
    assert grounded.grounded and chat.calls == 1 and grounded.citations


def test_cli_search_json_shape(kb, capsys) -> None:
    dsn, _ = kb
    rc = cli_main(["search", "--dsn", dsn, "--collection", "contrat", "--no-rerank", "-k", "3", "--json",
                   "--filter", "produit=habitation|auto", "sinistres"])
    assert rc == 0
    out = json.loads(capsys.readouterr().out)
    assert set(out["results"][0]) >= {"id", "text", "metadata", "rrf_score", "lexical_rank", "semantic_rank",
                                      "rerank_score"}
    assert len(out["results"]) == 3 and out["underfilled"] is False and out["underfill_reason"] is None
    assert set(out["settings"]) >= {"ef_search", "iterative_scan", "rrf_k", "embedding_model"}


def test_cli_ask_refuses_without_calling_the_model(kb, capsys, monkeypatch) -> None:
    dsn, _ = kb

    class Forbidden:
        def chat(self, model: str, messages: list[dict[str, str]]) -> str:
            raise AssertionError("the chat model must not be called below the evidence threshold")

    monkeypatch.setattr("ragfr.cli.ask._chat_client", lambda timeout: Forbidden())
    rc = cli_main(["ask", "--dsn", dsn, "--collection", "contrat", "--json", "tarte tatin aux pommes"])
    out = json.loads(capsys.readouterr().out)
    assert rc == 3 and out["grounded"] is False and out["evidence"]["scores"]


def test_cli_errors_are_one_line(kb, capsys) -> None:
    dsn, _ = kb
    assert cli_main(["search", "--dsn", dsn, "--collection", "contrat", "--no-rerank", "   "]) == 2
    err = capsys.readouterr().err.strip()
    assert err.startswith("ragfr: error: empty query") and "\n" not in err
    assert cli_main(["search", "--dsn", "postgresql://nobody:x@127.0.0.1:1/none", "--collection", "c", "--no-rerank",
                     "q"]) == 2
    assert "cannot connect" in capsys.readouterr().err


def test_unloadable_reranker_is_a_startup_error(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match="could not be loaded"):
        load_reranker(str(tmp_path / "no-such-model"))


def test_rerank_keeps_three_of_the_top_ten(kb, e5, tmp_path: Path) -> None:
    _, conn = kb
    reranker = load_reranker(str(tiny_cross_encoder(tmp_path / "ce")))  # STAND-IN weights: plumbing only
    fused = search(conn, "sinistre franchise", collections=["contrat"], embedder=e5, config=SearchConfig(k=10, rerank=False))
    result = search(conn, "sinistre franchise", collections=["contrat"], embedder=e5, reranker=reranker,
                    config=SearchConfig(rerank_top_n=10, rerank_keep=3))
    assert len(result.hits) == 3
    assert {h.id for h in result.hits} <= {h.id for h in fused.hits}
    keys = [(-(h.rerank_score or 0), h.id) for h in result.hits]
    assert keys == sorted(keys) and all(h.rerank_score is not None for h in result.hits)
    assert result.settings["reranker"] == str(tmp_path / "ce")


def test_errors_never_poison_the_connection(kb, e5) -> None:
    _, conn = kb
    for bad in ("", "x" * 100_000):
        with pytest.raises(RagfrError):
            search(conn, bad, collections=["contrat"], embedder=e5, config=NO_RERANK)
    conn.execute("DROP TABLE ragfr_embedding_space")
    with pytest.raises(RagfrError, match="ragfr migrate"):
        search(conn, "sinistre", collections=["contrat"], embedder=e5, config=NO_RERANK)
    assert conn.execute("SELECT 1").fetchone() == (1,)


def _same_ranking(a, b) -> None:
    assert [(h.id, h.rrf_score, h.ranks, h.scores) for h in a.hits] == [(h.id, h.rrf_score, h.ranks, h.scores) for h in b.hits]
    assert (a.underfilled, a.settings) == (b.underfilled, b.settings)


def test_lexical_arm_on_a_second_connection_ranks_the_same(kb, e5) -> None:
    dsn, conn = kb
    with psycopg.connect(dsn, autocommit=True) as second:
        for query, conditions in (("Comment déclarer un sinistre ?", []),
                                  ("franchise dommage", [parse_condition("produit=habitation")])):
            one = search(conn, query, collections=["contrat"], conditions=conditions, embedder=e5, config=NO_RERANK)
            two = search(conn, query, collections=["contrat"], conditions=conditions, embedder=e5, config=NO_RERANK,
                         lexical_conn=second)
            _same_ranking(one, two)
            assert two.hits and {"lexical", "semantic"} <= two.timings_ms.keys()
        # A lexical-only search has nothing to overlap with: it stays on the main connection.
        assert search(conn, "vol", collections=["contrat"], config=NO_RERANK.with_(semantic=False),
                      lexical_conn=second).hits


def test_lexical_connection_failure_is_clean_on_both_connections(kb, e5, pg_dsn) -> None:
    """The second connection really carries the lexical arm: pointed at a database without ragfr's tables,
    the search fails with a one-line error, and both connections stay usable."""
    dsn, conn = kb
    with psycopg.connect(pg_dsn, autocommit=True) as elsewhere:
        with pytest.raises(RagfrError, match="ragfr_collection_stats|ragfr_lex_blocks"):
            search(conn, "sinistre", collections=["contrat"], embedder=e5, config=NO_RERANK, lexical_conn=elsewhere)
        assert elsewhere.execute("SELECT 1").fetchone() == (1,)
    assert search(conn, "sinistre", collections=["contrat"], embedder=e5, config=NO_RERANK).hits
    assert conn.info.transaction_status == psycopg.pq.TransactionStatus.IDLE


def test_cli_ask_with_ollama_down_is_one_line(kb, capsys, monkeypatch) -> None:
    dsn, _ = kb
    with socket.socket() as s:  # a port nobody listens on
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    monkeypatch.setenv("OLLAMA_HOST", f"http://127.0.0.1:{port}")
    rc = cli_main(["ask", "--dsn", dsn, "--collection", "contrat", "délai pour déclarer un sinistre"])
    err = capsys.readouterr().err.strip()
    assert rc == 2 and err.startswith(f"ragfr: error: cannot reach Ollama at http://127.0.0.1:{port}"), err
    assert "\n" not in err


def test_cli_ask_gives_up_on_a_silent_chat_model(kb, capsys, monkeypatch) -> None:
    dsn, _ = kb
    with socket.socket() as server:  # accepts connections, never answers
        server.bind(("127.0.0.1", 0))
        server.listen()
        monkeypatch.setenv("OLLAMA_HOST", f"http://127.0.0.1:{server.getsockname()[1]}")
        rc = cli_main(["ask", "--dsn", dsn, "--collection", "contrat", "--chat-timeout", "1",
                       "délai pour déclarer un sinistre"])
    err = capsys.readouterr().err.strip()
    # It gave up at its own 1 s timeout, as it reports; a hang would never return. No clock around the call:
    # loading the models and ranking count in it, which a busy machine slows (issue 37 item 9).
    assert rc == 2 and "did not answer within 1 s" in err and "\n" not in err, err


def _sample(name: str, **labels: str) -> float:
    from prometheus_client import REGISTRY

    found = REGISTRY.get_sample_value(name, labels)
    assert found is not None, f"no sample {name}{labels}"
    return found


def test_searches_refusals_and_gate_decisions_move_the_metrics(kb, e5) -> None:
    """The counters and histograms of ragfr.metrics, moved by real searches (as the CLI and the chat run them)."""
    _, conn = kb
    ok, count = _sample("ragfr_searches_total", outcome="ok"), _sample("ragfr_search_duration_seconds_count")
    lex, vec = (_sample("ragfr_search_arm_duration_seconds_count", arm=a) for a in ("lexical", "vector"))
    seconds = _sample("ragfr_search_duration_seconds_sum")
    result = search(conn, "délai pour déclarer un sinistre", collections=["contrat"], embedder=e5, config=NO_RERANK)
    assert _sample("ragfr_searches_total", outcome="ok") == ok + 1
    assert _sample("ragfr_search_duration_seconds_count") == count + 1
    assert _sample("ragfr_search_duration_seconds_sum") - seconds == pytest.approx(result.timings_ms["total"] / 1000)
    assert _sample("ragfr_search_arm_duration_seconds_count", arm="lexical") == lex + 1
    assert _sample("ragfr_search_arm_duration_seconds_count", arm="vector") == vec + 1
    search(conn, "sinistre", collections=["contrat"], config=NO_RERANK.with_(semantic=False))
    assert _sample("ragfr_search_arm_duration_seconds_count", arm="vector") == vec + 1  # no vector arm ran
    assert _sample("ragfr_search_arm_duration_seconds_count", arm="lexical") == lex + 2

    errors, model, width = (_sample("ragfr_searches_total", outcome="error"),
                            _sample("ragfr_embedding_space_mismatches_total", check="model"),
                            _sample("ragfr_embedding_space_mismatches_total", check="dimension"))
    with pytest.raises(EmbeddingSpaceError):
        search(conn, "sinistre", collections=["contrat"], embedder=load_embedder("local:use-multilingual", cache=False),
               config=NO_RERANK)
    with pytest.raises(EmbeddingSpaceError):
        search(conn, "sinistre", collections=["contrat"], query_vector=[0.1] * 383, config=NO_RERANK)
    assert _sample("ragfr_embedding_space_mismatches_total", check="model") == model + 1
    assert _sample("ragfr_embedding_space_mismatches_total", check="dimension") == width + 1
    assert _sample("ragfr_searches_total", outcome="error") == errors + 2

    refused, answered = (_sample("ragfr_gate_decisions_total", surface="cli", decision=d) for d in ("refuse", "answer"))
    answer(search(conn, "recette de la tarte tatin aux pommes caramélisées", collections=["contrat"], embedder=e5,
                  config=NO_RERANK), _Chat(), "test-model")
    assert _sample("ragfr_gate_decisions_total", surface="cli", decision="refuse") == refused + 1
    answer(search(conn, "délai pour déclarer un sinistre", collections=["contrat"], embedder=e5, config=NO_RERANK),
           _Chat(), "test-model")
    assert _sample("ragfr_gate_decisions_total", surface="cli", decision="answer") == answered + 1
