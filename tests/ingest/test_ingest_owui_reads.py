"""Rows written by `ingest_documents` read by the REAL Open WebUI 0.12.4 pgvector client (in its own venv,
.venv-owui): `get` of the collection, a vector `search`, and a metadata-filtered `query`."""

from __future__ import annotations

import json
import os
import subprocess
from collections.abc import Callable
from pathlib import Path

import psycopg
import pytest
from tests.support.paths import REPO

from ragfr.embed import load_embedder
from ragfr.ingest import ChunkConfig, Document, ingest_documents

OWUI_PYTHON = Path(os.environ.get("RAGFR_OWUI_PYTHON", REPO / ".venv-owui" / "bin" / "python"))

READER = r"""
import json, sys
from open_webui.retrieval.vector.dbs.pgvector import PgvectorClient
vector = json.loads(sys.argv[1])
client = PgvectorClient()
got = client.get("owui")
hits = client.search("owui", [vector], limit=1)
filtered = client.query("owui", filter={"lang": "fr"})
print(json.dumps({"ids": got.ids[0], "metadatas": got.metadatas[0], "documents": got.documents[0],
                  "top": hits.ids[0], "filtered": filtered.ids[0]}))
"""


@pytest.mark.owui
@pytest.mark.slow
def test_open_webui_reads_ingested_rows(migrated_db: Callable[..., str], tmp_path: Path, late_setup: None) -> None:
    # Checked here, not at import: under `make test` .venv-owui may still be building when this file is collected.
    if not OWUI_PYTHON.is_file():
        pytest.skip(f"Open WebUI venv absent ({OWUI_PYTHON}): run its setup")
    dsn = migrated_db(dims=384, model="local:multilingual-e5-small")
    embedder = load_embedder("local:multilingual-e5-small", cache=False)
    docs = [
        Document(text="L'assuré déclare le sinistre sous cinq jours.", source="/d/a.txt", metadata={"lang": "fr"}),
        Document(text="The policy holder reports the claim within five days.", source="/d/b.txt",
                 metadata={"lang": "en"}),
    ]
    with psycopg.connect(dsn) as conn:
        report = ingest_documents(conn, "owui", docs, embedder, ChunkConfig(), progress=False)
        fr_id = report.chunk_ids[("/d/a.txt", "")][0]
    (query_vector,) = embedder.embed_queries(["déclarer un sinistre"])
    frontend = OWUI_PYTHON.parent.parent / "lib" / "python3.11" / "site-packages" / "open_webui" / "frontend"
    env = {
        **os.environ,
        "DATA_DIR": str(tmp_path), "FRONTEND_BUILD_DIR": str(frontend), "OFFLINE_MODE": "true",
        "HF_HUB_OFFLINE": "1", "WEBUI_SECRET_KEY": "test", "VECTOR_DB": "pgvector", "PGVECTOR_DB_URL": dsn,
        "PGVECTOR_INITIALIZE_MAX_VECTOR_LENGTH": "384", "PGVECTOR_INDEX_METHOD": "hnsw",
        "PGVECTOR_HNSW_M": "16", "PGVECTOR_HNSW_EF_CONSTRUCTION": "64",
    }
    proc = subprocess.run([str(OWUI_PYTHON), "-c", READER, json.dumps(query_vector)], cwd=tmp_path, env=env,
                          capture_output=True, text=True, timeout=600, check=False)
    assert proc.returncode == 0, proc.stderr[-3000:]
    out = json.loads(proc.stdout.strip().splitlines()[-1])
    assert sorted(out["ids"]) == sorted(i for ids in report.chunk_ids.values() for i in ids)
    assert {m["name"] for m in out["metadatas"]} == {"a.txt", "b.txt"}
    assert all(m["source"].startswith("/d/") and "chunk_index" in m for m in out["metadatas"])
    assert out["top"] == [fr_id] and out["filtered"] == [fr_id]
