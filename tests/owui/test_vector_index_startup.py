"""Open WebUI 0.12.4 starts on a database whose HNSW index is the half-precision one (migration 0011) after
an embedding migration switched it to a new space, leaves that index as it is, writes through it, and
ragfr's vector arm walks it. Real Open WebUI (patched, settings of `make up`), real PostgreSQL, real
embedding models; the Ollama-API test double serves e5 to Open WebUI (no Ollama here)."""

from __future__ import annotations

from pathlib import Path

import psycopg
import pytest
from tests.support.embmigrate import SOURCE, TARGET, owui_insert
from tests.support.embmigrate_corpus import chunks

from ragfr.embed import load_embedder
from ragfr.embmigrate import runner
from ragfr.embmigrate.options import MigrateOptions
from ragfr.retrieval.config import SearchConfig
from ragfr.retrieval.hybrid import search
from ragfr.vector_index.upgrade import migrate
from ragfr_tools import pgdb

from .stack import sign_up_admin, start_double, start_open_webui, stop

INDEX_SQL = ("SELECT indexdef, to_regclass('idx_document_chunk_vector')::oid::int FROM pg_indexes"
             " WHERE indexname = 'idx_document_chunk_vector'")


@pytest.fixture
def switched_db(pg_dsn: str):  # type: ignore[no-untyped-def]
    """A 512-dim USE database migrated by `ragfr embeddings migrate` to e5 (384 dims), switched."""
    with pgdb.fresh_database(pg_dsn, "ragfr_hv") as dsn:
        migrate(dsn, 512, SOURCE)
        with psycopg.connect(dsn, autocommit=True) as conn:
            owui_insert(conn, chunks(12))
        assert runner.migrate(MigrateOptions(dsn=dsn, to=TARGET, progress=False), print) == 0
        yield dsn


def test_open_webui_starts_writes_and_ragfr_walks_the_migrated_half_precision_index(
    switched_db: str, owui_site_packages: Path, patched_tree: Path, tmp_path: Path
) -> None:
    with psycopg.connect(switched_db, autocommit=True) as conn:
        definition, oid = conn.execute(INDEX_SQL).fetchone()  # type: ignore[misc]
    assert "USING hnsw (((vector)::halfvec(384)) halfvec_cosine_ops) WITH (m='16', ef_construction='64')" in definition
    double = start_double(tmp_path)
    try:
        server = start_open_webui(tmp_path, owui_site_packages, patched_tree, switched_db, double)
        try:
            token = sign_up_admin(server)
            # Open WebUI embeds (through the double's e5) and inserts into the vector(384) column.
            from ragfr_tools import owui_client as client

            client.knowledge_base(server.url, token, "contrats", {
                "franchise.txt": "La franchise du contrat habitation est de 150 euros par sinistre déclaré.",
            })
        finally:
            stop(server.proc)
        log = server.log.read_text(errors="replace")
    finally:
        stop(double.proc)
    assert "Error during initialization" not in log, log[-3000:]
    with psycopg.connect(switched_db, autocommit=True) as conn:
        # Startup found the index it checks (name, hnsw) and neither replaced nor duplicated it.
        assert conn.execute(INDEX_SQL).fetchone() == (definition, oid)
        written = conn.execute("SELECT id, collection_name FROM document_chunk WHERE text LIKE '%%franchise%%'"
                               " AND embedding_model = %s", (TARGET,)).fetchall()
        assert written, "Open WebUI wrote no chunk"
        collection = written[0][1]
        query = load_embedder(TARGET, cache=False).embed_queries(["Quel est le montant de la franchise ?"])[0]
        # Both collections (13 rows) and exact_threshold=1: the arm walks the graph even on this small table,
        # so the hit comes from the index.
        result = search(conn, "franchise", collections=[collection, "kb-1"], query_vector=query,
                        config=SearchConfig(k=5, semantic_depth=5, lexical=False, rerank=False, exact_threshold=1))
    assert result.settings["vector_index"] == "halfvec" and result.arms["semantic"].strategy == "hnsw"
    assert result.hits[0].id == written[0][0]
