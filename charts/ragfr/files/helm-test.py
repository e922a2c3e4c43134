"""`helm test` for a ragfr release, run in the ragfr image against the live pods.

Checks, each printed as one PASS/FAIL line (exit 1 if any fails):
  health  - Open WebUI answers /health with status true;
  models  - Ollama lists every model the release names by its exact name:tag (Open WebUI's embedding model, the
            chat model, the extras), and the check names each one it lacks;
  patch   - the running Open WebUI serves the patch marker, and it lists every configured file as changed;
  schema  - every migration this image knows is applied and document_chunk.vector has the configured width;
  french  - a French query reaches a differently inflected, accent-folded document through ragfr's own
            hybrid search (lexical arm), and ragfr's analyzer agrees with PostgreSQL's ragfr_french.
The French check writes one chunk in a throwaway collection inside a transaction that is rolled back.
"""

import json
import os
import sys
import urllib.request
import uuid
from collections.abc import Callable

import psycopg

OWUI = os.environ["OPENWEBUI_URL"].rstrip("/")
DSN = os.environ["DATABASE_URL"]
DIMS = int(os.environ["EMBEDDING_DIMS"])


def get_json(path: str) -> dict:
    with urllib.request.urlopen(f"{OWUI}{path}", timeout=10) as response:
        return json.loads(response.read())


def check_health() -> str:
    body = get_json("/health")
    assert body.get("status") is True, f"/health answered {body}"
    return "Open WebUI /health status true"


def check_models() -> str:
    from ollama_models import missing  # files/ollama_models.py, beside this script in the scripts ConfigMap

    url = os.environ["OLLAMA_URL"]
    wanted = [os.environ["EMBEDDING_MODEL"], *os.environ.get("OLLAMA_MODELS", "").split()]
    lacking, present = missing(url, wanted)
    assert not lacking, (f"Ollama at {url} lacks {', '.join(lacking)} (it holds: {', '.join(present) or 'no model'}); "
                         "pull them, or fill the model volume (docs/runbooks/ollama-models-offline.md)")
    return f"Ollama at {url} holds {', '.join(dict.fromkeys(w for w in wanted if w))}"


def check_patch() -> str:
    if os.environ.get("PATCH_ENABLED") != "true":
        return "patch disabled in values: nothing to check"
    marker = get_json("/static/ragfr-patch.json")
    expected = os.environ["PATCH_FILES"].split()
    files = marker.get("files", {})
    assert sorted(files) == sorted(expected), f"marker lists {sorted(files)}, expected {sorted(expected)}"
    same = [f for f, h in files.items() if h["pristine_sha256"] == h["patched_sha256"]]
    assert not same, f"unchanged by the patch: {same}"
    return f"patch marker for Open WebUI {marker.get('openwebui_version')}: {len(files)} files patched"


def check_schema() -> str:
    from ragfr.db.migrate import discover, schema_version

    newest = discover()[-1].version
    current = schema_version(DSN)
    assert current is not None and current >= newest, f"schema at version {current}, this image knows {newest}"
    with psycopg.connect(DSN) as conn:
        width = conn.execute(
            "SELECT atttypmod FROM pg_attribute WHERE attrelid = 'document_chunk'::regclass AND attname = 'vector'"
        ).fetchone()
    assert width and width[0] == DIMS, f"document_chunk.vector has {width}, expected {DIMS} dims"
    return f"schema at version {current} (image knows {newest}), vector({DIMS})"


def check_french() -> str:
    from ragfr.analysis.french import analyze
    from ragfr.retrieval import hybrid
    from ragfr.retrieval.arms import LEXICAL

    query, document = os.environ["FRENCH_QUERY"], os.environ["FRENCH_DOCUMENT"]
    collection = f"ragfr-helm-test-{uuid.uuid4().hex[:12]}"
    unit = [1.0] + [0.0] * (DIMS - 1)
    with psycopg.connect(DSN) as conn:
        try:
            pg = conn.execute(
                "SELECT array_agg(lexeme ORDER BY lexeme) FROM unnest(to_tsvector('ragfr_french', %s))", (query,)
            ).fetchone()
            ours = sorted(set(analyze(query)))
            assert (pg[0] or []) == ours, f"ragfr analyzer {ours} != PostgreSQL ragfr_french {pg[0]}"
            chunk_id = str(uuid.uuid4())
            conn.execute(
                "INSERT INTO document_chunk (id, vector, collection_name, text, vmetadata)"
                " VALUES (%s, %s::vector, %s, %s, '{}'::jsonb)",
                (chunk_id, str(unit), collection, document),
            )
            result = hybrid.search(conn, query, collections=[collection], query_vector=unit)
            hits = [h for h in result.hits if h.id == chunk_id]
            assert hits and hits[0].ranks.get(LEXICAL.name) == 1, f"lexical arm missed the document: {result.hits}"
        finally:
            conn.rollback()
    return f"{query!r} -> lexemes {ours} found {document!r} (lexical rank 1)"


CHECKS: dict[str, Callable[[], str]] = {
    "health": check_health, "models": check_models, "patch": check_patch, "schema": check_schema,
    "french": check_french,
}


def main() -> int:
    """Runs the checks named on the command line (all by default)."""
    failed = 0
    for name in sys.argv[1:] or list(CHECKS):
        check = CHECKS[name]
        try:
            print(f"PASS {name}: {check()}")
        except Exception as exc:  # every failure is reported, then the test fails as a whole
            failed += 1
            print(f"FAIL {name}: {type(exc).__name__}: {exc}")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
