"""The block index's BM25 (migrations/0010, ragfr.lexical_index.blockmax) returns exactly what scoring every
matching chunk from its tsvector returns (scan.bm25_filter_first, the plain definition): the same ids
in the same order, scores to 1e-9, on real French text (PIAF paragraphs and questions, the golden set,
the PIAF CI subset) and on adversarial cases, while writes change the index between queries."""

from __future__ import annotations

import random
import re
from collections.abc import Callable, Iterator
from functools import partial
from typing import Any

import psycopg
import pytest
from tests.support.lexidx import block_problems, indexed_postings, recounted_postings
from tests.support.paths import GOLDEN, PIAF_JSON

from ragfr.analysis.french import query_terms
from ragfr.filters.grammar import Condition
from ragfr.filters.predicate import Filters
from ragfr.lexical_index import blockmax, scan
from ragfr.retrieval import lexical
from ragfr.retrieval.config import SearchConfig
from ragfr.retrieval.strategy import lexical_filter_first_threshold

needs_piaf = pytest.mark.skipif(not PIAF_JSON.is_file(), reason=f"shared PIAF dataset absent ({PIAF_JSON})")
MODEL = "ollama:test"
COMMON = "zzcommun"  # added to every chunk: a term of df = n


def _tie(x: float, y: float) -> bool:
    return abs(x - y) <= 1e-9 * max(1.0, abs(y))


Ranking = list[tuple[str, float]]


def same_ranking(got: Ranking, want: Ranking, what: str, deeper: Callable[[], Ranking] | None = None) -> None:
    """Equal ids in equal order and scores to 1e-9. Chunks whose scores differ by less than 1e-9 are a
    tie: float sums in another order may order them by a last bit instead of by id, so within such a
    group (and only there) the ids are compared as a set. A tie group cut by the depth may hold other
    members of the same tie: they must be in `deeper()` (the reference asked for more) with that score.
    `deeper` is called only then: the deeper reference is the dearest of the three scans, and most
    rankings need no look past their depth."""
    assert len(got) == len(want), f"{what}: {len(got)} results, expected {len(want)}"
    for (gi, gs), (wi, ws) in zip(got, want, strict=True):
        assert _tie(gs, ws), f"{what}: score of {gi} {gs} vs {wi} {ws}"
    start = 0
    for i in range(1, len(want) + 1):
        if i == len(want) or not _tie(want[i][1], want[i - 1][1]):
            g_ids = [x[0] for x in got[start:i]]
            w_ids = [x[0] for x in want[start:i]]
            if g_ids != w_ids and sorted(g_ids) != sorted(w_ids):
                further = deeper() if deeper is not None and i == len(want) else []
                cut = len(further) > len(want)
                tied = {d for d, sc in further if _tie(sc, want[i - 1][1])}
                assert cut and set(g_ids) <= tied, f"{what}: ranks {start}-{i}: {g_ids} vs {w_ids}"
            start = i


def compare(conn: psycopg.Connection[Any], terms: list[str], colls: tuple[str, ...], depth: int, what: str,
            stats: dict[str, int] | None = None) -> list[tuple[str, float]]:
    config = SearchConfig(lexical_depth=depth)
    filters = Filters(collections=colls, embedding_model=MODEL)
    got = scan.bm25_blocks(conn, terms, filters, config, stats)
    want = scan.bm25_filter_first(conn, terms, filters, config)
    same_ranking(got, want, what,
                 partial(scan.bm25_filter_first, conn, terms, filters, config.with_(lexical_depth=depth * 4 + 200)))
    return got


def _piaf() -> tuple[list[str], list[str]]:
    """Sentences of PIAF paragraphs (chunks) and PIAF questions, in file order."""
    from ragfr.eval.piaf import load_piaf

    data = load_piaf(PIAF_JSON)
    sentences: list[str] = []
    questions: list[str] = []
    for article in data["data"][:60]:
        for paragraph in article["paragraphs"]:
            sentences += [s for s in re.split(r"(?<=[.!?])\s+", paragraph["context"]) if len(s) > 20]
            questions += [qa["question"] for qa in paragraph["qas"]]
    return sentences, questions


@pytest.fixture(scope="module")
def piaf_text() -> tuple[list[str], list[str]]:
    if not PIAF_JSON.is_file():
        pytest.skip(f"shared PIAF dataset absent ({PIAF_JSON})")
    return _piaf()


@pytest.fixture
def corpus(migrated_db, piaf_text) -> Iterator[tuple[psycopg.Connection[Any], list[str]]]:
    """~2,500 PIAF sentences in two collections, written as Open WebUI and ragfr ingest write: big
    multi-row statements (whole blocks at once, then tails) and one-row statements (tail appends)."""
    sentences, questions = piaf_text
    with psycopg.connect(migrated_db(dims=3, model=MODEL), autocommit=True) as conn:
        rows = [(f"c{i:05d}", "a" if (i // 40) % 3 else "b", f"{s} {COMMON}") for i, s in enumerate(sentences)]
        bulk, singles = rows[:-60], rows[-60:]
        for start in range(0, len(bulk), 700):
            batch = bulk[start:start + 700]
            conn.execute("INSERT INTO document_chunk (id, vector, collection_name, text)"
                         " SELECT i, '[1,0,0]', c, t FROM unnest(%s::text[], %s::text[], %s::text[]) AS x(i, c, t)",
                         ([r[0] for r in batch], [r[1] for r in batch], [r[2] for r in batch]))
        for i, c, t in singles:
            conn.execute("INSERT INTO document_chunk (id, vector, collection_name, text) VALUES (%s, '[1,0,0]', %s, %s)"
                         " ON CONFLICT (id) DO NOTHING", (i, c, t))
        assert block_problems(conn) == []
        yield conn, questions


@pytest.fixture(params=["default", "forced"])
def pruning(request, monkeypatch) -> str:
    """'forced': the first read is one term only, so that theta, the MaxScore split and the block bounds
    decide what else is read (on a few thousand chunks, the default budget reads most queries whole), and
    scores are summed by sorting docnos, as when edits have left them sparse (a small corpus's are dense)."""
    if request.param == "forced":
        monkeypatch.setattr(blockmax, "FIRST_READ_POSTINGS", 0)
        monkeypatch.setattr(blockmax, "_DENSE_DOCNOS_PER_POSTING", 0)
        monkeypatch.setattr(blockmax, "_DENSE_DOCNOS_MIN", 0)
    return str(request.param)


@needs_piaf
def test_piaf_questions_rank_exactly_as_the_tsvector_scoring(corpus, pruning) -> None:
    conn, questions = corpus
    for n, question in enumerate(questions[:120]):
        # as asked, and with a term every chunk holds (the common-word case early termination is for)
        for terms in (query_terms(question), [*query_terms(question), COMMON]):
            for colls in (("a",), ("a", "b")):
                for depth in (10, 50):
                    compare(conn, terms, colls, depth, f"q{n} {question!r} {colls} depth {depth}")


@needs_piaf
def test_adversarial_queries(corpus, pruning) -> None:
    conn, questions = corpus
    frequent = [r[0] for r in conn.execute(
        "SELECT lexeme FROM ragfr_term_stats WHERE collection_name = 'a' ORDER BY df DESC, lexeme LIMIT 6")]
    assert frequent[0] == COMMON
    rare = conn.execute("SELECT lexeme FROM ragfr_term_stats WHERE df = 1 ORDER BY lexeme LIMIT 3").fetchall()
    cases = {
        "a term in every chunk": [COMMON],
        "only common terms": frequent,
        "common terms and a rare one": [*frequent[:3], rare[0][0]],
        "a frequent term and the every-chunk one": [frequent[1], COMMON],
        "rare terms only": [r[0] for r in rare],
        "no chunk holds it": ["zzznulpart"],
        "a matching term and an absent one": [rare[1][0], "zzznulpart"],
    }
    for name, terms in cases.items():
        for colls in (("a",), ("b",), ("a", "b")):
            for depth in (1, 10, 50, 5000):  # 5000: deeper than the matches
                stats: dict[str, int] = {}
                compare(conn, terms, colls, depth, f"{name} {colls} depth {depth}", stats)
                if pruning == "forced" and name == "a frequent term and the every-chunk one" and depth == 10:
                    # the every-chunk term cannot lift a chunk without the frequent one into the top 10:
                    # the search must stop before reading it all (so the bounds were really used)
                    assert stats["postings_read"] < stats["postings"], (colls, stats)


@needs_piaf
def test_filters_rejecting_the_top_candidates(corpus, pruning) -> None:
    """The walk skips chunks that fail the hard filters (here: no vector, so no embedding_model) and
    theta comes from passing chunks only."""
    conn, questions = corpus
    terms = query_terms(questions[3]) + [COMMON]
    top = compare(conn, terms, ("a", "b"), 30, "before")
    conn.execute("UPDATE document_chunk SET vector = NULL WHERE id = ANY(%s)", ([i for i, _ in top[:25]],))
    after = compare(conn, terms, ("a", "b"), 30, "top 25 without a vector")
    assert not {i for i, _ in top[:25]} & {i for i, _ in after}
    conn.execute("UPDATE document_chunk SET vector = NULL WHERE collection_name = 'b'")
    compare(conn, terms, ("a", "b"), 30, "collection b without vectors")
    compare(conn, [COMMON], ("b",), 10, "nothing passes")


@needs_piaf
def test_metadata_conditions_walked_through_the_block_index_rank_as_filter_first(corpus, pruning) -> None:
    """With metadata conditions that many rows pass, the block index's top is walked through the filter
    (theta from passing chunks, failures probed once): the same ranking as scoring the passing chunks."""
    conn, questions = corpus
    conn.execute("UPDATE document_chunk SET vmetadata = jsonb_build_object('sel', CASE"
                 " WHEN hashtext(id) % 10 = 0 THEN 'p10' WHEN hashtext(id) % 100 = 1 THEN 'p1' ELSE 'rest' END,"
                 " 'page', hashtext(id) % 7)")
    filters = {
        "10 %": (Condition("sel", "eq", ("p10",)),),
        "1 %": (Condition("sel", "eq", ("p1",)),),
        "11 %, two values": (Condition("sel", "in", ("p10", "p1")),),
        "a range and a value": (Condition("page", "gte", ("3",)), Condition("sel", "eq", ("rest",))),
        "nothing passes": (Condition("sel", "eq", ("absent",)),),
    }
    for name, conditions in filters.items():
        for n, question in enumerate(questions[:40]):
            for terms in (query_terms(question), [*query_terms(question), COMMON]):
                for depth in (10, 50):
                    config = SearchConfig(lexical_depth=depth)
                    f = Filters(("a", "b"), conditions, embedding_model=MODEL)
                    got = scan.bm25_blocks(conn, terms, f, config)
                    want = scan.bm25_filter_first(conn, terms, f, config)
                    same_ranking(got, want, f"{name}: q{n} {question!r} depth {depth}",
                                 partial(scan.bm25_filter_first, conn, terms, f,
                                         config.with_(lexical_depth=depth * 4 + 200)))


@pytest.mark.parametrize(("searched", "depth", "ratio", "expected"), [
    (100_000, 50, 5.0, 5000),     # docs/benchmarks.md: a 1 % filter scores first, a 10 % one walks
    (1_000_000, 50, 5.0, 15811),
    (10, 50, 5.0, 50),            # never below depth
])
def test_lexical_threshold_formula(searched: int, depth: int, ratio: float, expected: int) -> None:
    assert lexical_filter_first_threshold(searched, depth, ratio) == expected


@needs_piaf
def test_the_cost_rule_chooses_the_lexical_strategy(corpus) -> None:
    """Filter first when the planner expects few passing rows (or cannot estimate: ranges), the block index
    walked through the filter when many pass; the report says which, with the estimate and threshold."""
    conn, questions = corpus
    conn.execute("UPDATE document_chunk SET vmetadata = jsonb_build_object('sel', CASE"
                 " WHEN hashtext(id) % 2 = 0 THEN 'half' WHEN hashtext(id) % 100 = 1 THEN 'p1' ELSE 'rest' END,"
                 " 'page', hashtext(id) % 7)")
    conn.execute("ANALYZE document_chunk")
    searched = conn.execute("SELECT count(*) FROM document_chunk").fetchone()[0]
    config = SearchConfig(lexical_depth=20)
    threshold = lexical_filter_first_threshold(searched, 20, config.lexical_probe_cost_ratio)
    assert 20 < threshold < searched // 2, threshold  # the half filter is above it, the 1 % one below
    terms = [*query_terms(questions[5]), COMMON]
    cases = {
        "half": ((Condition("sel", "eq", ("half",)),), "bm25"),
        "p1": ((Condition("sel", "eq", ("p1",)),), "bm25-filter-first"),
        "range": ((Condition("page", "gte", ("0",)),), "bm25-filter-first"),  # no estimate
    }
    for name, (conditions, strategy) in cases.items():
        f = Filters(("a", "b"), conditions, embedding_model=MODEL)
        with conn.transaction():
            got, report = lexical.bm25(conn, terms, f, config, searched)
        assert report.strategy == strategy, (name, report)
        assert report.threshold == threshold
        assert (report.estimated is None) == (name == "range"), (name, report)
        assert [(c.id, c.score) for c in got] == scan.bm25_filter_first(conn, terms, f, config), name
    # `searched` not given: read from the collection statistics, the same choice
    f = Filters(("a", "b"), cases["half"][0], embedding_model=MODEL)
    assert lexical.bm25(conn, terms, f, config)[1].threshold == threshold


@needs_piaf
def test_writes_between_queries_keep_the_index_exact(corpus, pruning) -> None:
    conn, questions = corpus
    rng = random.Random(5)
    probes = [query_terms(q) for q in questions[:200:10]] + [[COMMON]]
    ids = [r[0] for r in conn.execute("SELECT id FROM document_chunk ORDER BY id")]
    steps = [
        ("delete the top of a query", lambda: conn.execute(
            "DELETE FROM document_chunk WHERE id = ANY(%s)",
            ([i for i, _ in scan.bm25_blocks(conn, probes[0], Filters(("a", "b"), embedding_model=MODEL),
                                                  SearchConfig(lexical_depth=20))],))),
        ("delete a range", lambda: conn.execute("DELETE FROM document_chunk WHERE id BETWEEN %s AND %s",
                                                (ids[300], ids[700]))),
        ("rewrite texts", lambda: conn.execute(
            "UPDATE document_chunk SET text = text || ' ' || %s WHERE id = ANY(%s)",
            (" ".join(probes[1] * 3), rng.sample(ids[800:], 150)))),
        ("move chunks to the other collection", lambda: conn.execute(
            "UPDATE document_chunk SET collection_name = 'b' WHERE id = ANY(%s)", (rng.sample(ids[800:], 200),))),
        ("metadata only", lambda: conn.execute("UPDATE document_chunk SET vmetadata = '{\"x\": 1}'")),
        ("upsert, Open WebUI style", lambda: conn.execute(
            "INSERT INTO document_chunk (id, vector, collection_name, text) SELECT i, '[0,1,0]', 'a', t"
            "  FROM unnest(%s::text[], %s::text[]) AS x(i, t)"
            " ON CONFLICT (id) DO UPDATE SET vector = EXCLUDED.vector, collection_name = EXCLUDED.collection_name,"
            " text = EXCLUDED.text", (rng.sample(ids, 300) + [f"new{i}" for i in range(300)],
                                      [f"{COMMON} " + " ".join(rng.sample(probes[2] + probes[3], 2))] * 600))),
        ("truncate and reload", lambda: (
            conn.execute("TRUNCATE document_chunk"),
            conn.execute("INSERT INTO document_chunk (id, vector, collection_name, text)"
                         " SELECT 'r' || g, '[1,0,0]', 'a', %s || ' ' || g FROM generate_series(1, 400) g", (COMMON,)))),
    ]
    for name, step in steps:
        step()
        stats = set(conn.execute("SELECT collection_name, n_docs, total_len FROM ragfr_collection_stats").fetchall())
        recount = set(conn.execute(
            "SELECT collection_name, count(*), sum(fts_len) FROM document_chunk GROUP BY 1").fetchall())
        assert stats == recount, name
        assert block_problems(conn) == [], name
        assert indexed_postings(conn) == recounted_postings(conn), name
        for terms in probes:
            for colls in (("a",), ("a", "b")):
                compare(conn, terms, colls, 25, f"after {name}: {terms} {colls}")


def _ingested(conn: psycopg.Connection[Any], dataset: Any) -> str:
    """The dataset through production chunking, with a constant vector (the lexical arm never reads it)."""
    from ragfr.eval.corpus import to_ingest_documents
    from ragfr.ingest.chunking import ChunkConfig, chunk_text

    name = f"ds-{dataset.name}"
    rows = []
    for doc in to_ingest_documents(dataset):
        for k, chunk in enumerate(chunk_text(doc.text, ChunkConfig())):
            rows.append((f"{doc.doc_id}-{k}", chunk.text))
    conn.execute("INSERT INTO document_chunk (id, vector, collection_name, text)"
                 " SELECT i, '[1,0,0]', %s, t FROM unnest(%s::text[], %s::text[]) AS x(i, t)",
                 (name, [r[0] for r in rows], [r[1] for r in rows]))
    return name


def _eval_sets() -> list[Any]:
    from ragfr.eval.beir import load_dataset
    from ragfr.eval.piaf import load_piaf, piaf_to_beir

    sets = [load_dataset(GOLDEN)]
    if PIAF_JSON.is_file():  # the CI subset of mk/eval.mk: 40 articles, seed 7
        sets.append(piaf_to_beir(load_piaf(PIAF_JSON), articles=40, seed=7))
    return sets


def test_golden_set_and_piaf_ci_subset_rank_exactly(migrated_db, pruning) -> None:
    with psycopg.connect(migrated_db(dims=3, model=MODEL), autocommit=True) as conn:
        for dataset in _eval_sets():
            name = _ingested(conn, dataset)
            for qid, query in dataset.queries.items():
                terms = query_terms(query.text)
                if terms:
                    compare(conn, terms, (name,), 50, f"{dataset.name} {qid} {query.text!r}")
                    compare(conn, terms, (name,), 10, f"{dataset.name} {qid} {query.text!r}")


def test_concurrent_writers_keep_the_index_exact_without_deadlock(migrated_db) -> None:
    """Four writers at once on the same terms and collections (inserts of whole batches, Open WebUI
    upserts, text edits, moves, deletes), each in its own transactions: every key's tail block is shared,
    so writers must queue on it (in key order), never deadlock, and nothing may be lost."""
    import threading

    dsn = migrated_db(dims=3, model=MODEL)
    words = "sinistre assureur franchise délai garantie exclusion vol incendie prime contrat".split()
    errors: list[BaseException] = []

    def writer(w: int) -> None:
        rng = random.Random(w)
        try:
            with psycopg.connect(dsn) as conn:
                for step in range(25):
                    ids = [f"w{rng.randint(0, 3)}-{rng.randint(0, 600)}" for _ in range(40)]
                    texts = [" ".join(rng.choice(words) for _ in range(rng.randint(1, 8))) for _ in ids]
                    colls = [rng.choice("ab") for _ in ids]
                    op = step % 4
                    if op in (0, 1):
                        conn.execute(
                            "INSERT INTO document_chunk (id, vector, collection_name, text)"
                            " SELECT DISTINCT ON (i) i, '[1,0,0]', c, t FROM unnest(%s::text[], %s::text[], %s::text[])"
                            " AS x(i, c, t) ON CONFLICT (id) DO UPDATE SET collection_name = EXCLUDED.collection_name,"
                            " text = EXCLUDED.text", (ids, colls, texts))
                    elif op == 2:
                        conn.execute("UPDATE document_chunk SET text = text || ' ' || %s WHERE id = ANY(%s)",
                                     (rng.choice(words), ids[:10]))
                    else:
                        conn.execute("DELETE FROM document_chunk WHERE id = ANY(%s)", (ids[:8],))
                    conn.commit()
        except BaseException as exc:  # reported by the main thread
            errors.append(exc)

    with psycopg.connect(dsn, autocommit=True) as conn:  # full blocks first: concurrent appends spill over
        rng = random.Random(9)
        conn.execute("INSERT INTO document_chunk (id, vector, collection_name, text)"
                     " SELECT 'p' || g, '[1,0,0]', CASE WHEN g %% 2 = 0 THEN 'a' ELSE 'b' END, t"
                     " FROM unnest(%s::text[]) WITH ORDINALITY AS x(t, g)",
                     ([" ".join(rng.sample(words, 5)) for _ in range(1000)],))
    threads = [threading.Thread(target=writer, args=(w,)) for w in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(timeout=300)
    assert not errors, errors
    with psycopg.connect(dsn, autocommit=True) as conn:
        assert conn.execute("SELECT max(n) FROM ragfr_lex_blocks").fetchone() == (128,)  # blocks did fill up
        assert block_problems(conn) == []
        assert indexed_postings(conn) == recounted_postings(conn)
        for terms in (["sinistr"], ["sinistr", "vol", "prim"], ["assureur", "franchis"]):
            compare(conn, terms, ("a", "b"), 30, f"{terms}")


def test_migration_builds_the_blocks_of_existing_rows(empty_db, tmp_path) -> None:
    """An existing database (migrated up to 0009, rows in it) gets its block index from document_chunk
    when 0010 runs, and the row-per-posting table is gone."""
    import shutil

    from ragfr.db.migrate import migrations_dir
    from ragfr.vector_index.upgrade import migrate

    older = tmp_path / "migrations"
    older.mkdir()
    for f in migrations_dir().glob("*.sql"):
        if int(f.name[:4]) < 10:
            shutil.copy(f, older / f.name)
    migrate(empty_db, 3, MODEL, directory=older)
    rng = random.Random(3)
    words = "sinistre assureur franchise délai garantie exclusion vol incendie prime contrat".split()
    with psycopg.connect(empty_db, autocommit=True) as conn:
        conn.execute("INSERT INTO document_chunk (id, vector, collection_name, text)"
                     " SELECT 'm' || g, '[1,0,0]', c, t FROM unnest(%s::text[], %s::text[]) WITH ORDINALITY AS x(c, t, g)",
                     ([rng.choice("ab") for _ in range(700)],
                      [" ".join(rng.sample(words, 4)) if i % 50 else None for i in range(700)]))
        assert conn.execute("SELECT count(*) FROM ragfr_postings").fetchone() != (0,)
    migrate(empty_db, 3, MODEL)
    with psycopg.connect(empty_db, autocommit=True) as conn:
        assert conn.execute("SELECT to_regclass('ragfr_postings')").fetchone() == (None,)
        assert conn.execute("SELECT max(n) FROM ragfr_lex_blocks").fetchone() == (128,)
        assert block_problems(conn) == []
        assert indexed_postings(conn) == recounted_postings(conn)
        for terms in (["sinistr"], ["vol", "prim", "contrat"]):
            compare(conn, terms, ("a", "b"), 40, f"{terms}")
        conn.execute("INSERT INTO document_chunk (id, vector, collection_name, text) VALUES ('n1', '[1,0,0]', 'a', 'vol')")
        assert block_problems(conn) == [] and indexed_postings(conn) == recounted_postings(conn)


def test_packing_keeps_every_block_of_an_existing_database(empty_db, tmp_path) -> None:
    """A database at 0012 (postings in int arrays, some blocks emptied and rewritten by deletes) gets the same
    blocks, value for value and in order, packed by 0013; writes after it keep the index exact."""
    import shutil

    from ragfr.db.migrate import migrations_dir
    from ragfr.vector_index.upgrade import migrate

    older = tmp_path / "migrations"
    older.mkdir()
    for f in migrations_dir().glob("*.sql"):
        if int(f.name[:4]) < 13 or int(f.name[:4]) >= 100:  # a deployment of the previous release
            shutil.copy(f, older / f.name)
    migrate(empty_db, 3, MODEL, directory=older)
    rng = random.Random(13)
    words = "sinistre assureur franchise délai garantie exclusion vol incendie prime contrat".split()
    blocks = ("SELECT collection_name, lexeme, blk, lo, hi, n, max_tf, min_len, {} FROM ragfr_lex_blocks"
              " ORDER BY 1, 2, 3")
    with psycopg.connect(empty_db, autocommit=True) as conn:
        conn.execute("INSERT INTO document_chunk (id, vector, collection_name, text)"
                     " SELECT 'm' || g, '[1,0,0]', c, t FROM unnest(%s::text[], %s::text[]) WITH ORDINALITY AS x(c, t, g)",
                     ([rng.choice("ab") for _ in range(900)], [" ".join(rng.sample(words, 4)) for _ in range(900)]))
        conn.execute("DELETE FROM document_chunk WHERE id = ANY(%s)", ([f"m{rng.randrange(900)}" for _ in range(150)],))
        before = conn.execute(blocks.format("docnos, tfs, lens")).fetchall()
    migrate(empty_db, 3, MODEL)
    with psycopg.connect(empty_db, autocommit=True) as conn:
        assert conn.execute(
            "SELECT format_type(atttypid, atttypmod) FROM pg_attribute WHERE attrelid = 'ragfr_lex_blocks'::regclass"
            " AND attname IN ('docnos', 'tfs', 'lens')").fetchall() == [("bytea",)] * 3
        after = conn.execute(blocks.format(
            "ragfr_lex_int4s(docnos), ragfr_lex_int2s(tfs), ragfr_lex_int4s(lens)")).fetchall()
        assert after == before
        assert block_problems(conn) == [] and indexed_postings(conn) == recounted_postings(conn)
        conn.execute("DELETE FROM document_chunk WHERE id = ANY(%s)", ([f"m{rng.randrange(900)}" for _ in range(150)],))
        conn.execute("INSERT INTO document_chunk (id, vector, collection_name, text) VALUES ('n1', '[1,0,0]', 'a', 'vol')")
        assert block_problems(conn) == [] and indexed_postings(conn) == recounted_postings(conn)
        for terms in (["sinistr"], ["vol", "prim", "contrat"]):
            compare(conn, terms, ("a", "b"), 40, f"{terms}")


def test_packed_values_decode_exactly(migrated_db) -> None:
    """The SQL decoders read back what int4send / int2send packed, at the ends of the ranges in use (docnos up
    to int4's maximum, tf up to a tsvector's 256 positions and more) and for an empty block."""
    values = [0, 1, 255, 256, 65535, 65536, 2**24, 2**31 - 1]
    with psycopg.connect(migrated_db(), autocommit=True) as conn:
        got = conn.execute(
            "SELECT ragfr_lex_int4s(p4), ragfr_lex_int2s(p2), ragfr_lex_int4s(''::bytea), ragfr_lex_int2s(''::bytea)"
            "  FROM (SELECT string_agg(int4send(v), ''::bytea ORDER BY o) AS p4,"
            "               string_agg(int2send(least(v, 32767)::smallint), ''::bytea ORDER BY o) AS p2"
            "          FROM unnest(%s::integer[]) WITH ORDINALITY AS u(v, o)) s", (values,)).fetchone()
    assert got == (values, [min(v, 32767) for v in values], [], [])
