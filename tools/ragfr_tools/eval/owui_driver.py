"""Runs INSIDE the Open WebUI venv (.venv-owui), never imported by ragfr: calls Open WebUI 0.12.4's own
PgvectorClient.hybrid_search, the native hybrid path, exactly as its retrieval code does
(query_doc_with_native_hybrid_search passes query, vectors, limit and the BM25 weight, and no filter).

Protocol, one JSON object per line: stdin {"query", "vector", "limit"} -> stdout {"ids": [...]} (or
{"ids": null} when Open WebUI returns None, i.e. would fall back to its legacy path). The first stdout
line is {"ready": true}. Settings arrive as the environment Open WebUI reads at import time.
Standard library plus open_webui only: this file must not import ragfr.
"""

import importlib.util
import json
import logging
import os
import sys


def main() -> int:
    logging.disable(logging.WARNING)  # Open WebUI logs to stdout; the protocol owns stdout
    real_stdout = sys.stdout
    sys.stdout = sys.stderr
    # `open-webui serve` points FRONTEND_BUILD_DIR at the packaged frontend; a plain import does not, and
    # then refuses to load, so do what `serve` does.
    spec = importlib.util.find_spec("open_webui")
    if spec and spec.submodule_search_locations:
        package_dir = list(spec.submodule_search_locations)[0]
        os.environ.setdefault("FRONTEND_BUILD_DIR", os.path.join(package_dir, "frontend"))
    from open_webui.config import RAG_HYBRID_BM25_WEIGHT
    from open_webui.retrieval.vector.dbs.pgvector import PgvectorClient

    client = PgvectorClient()
    collection = sys.argv[1]
    real_stdout.write(json.dumps({"ready": True}) + "\n")
    real_stdout.flush()
    for line in sys.stdin:
        request = json.loads(line)
        result = client.hybrid_search(
            collection_name=collection,
            query=request["query"],
            vectors=[request["vector"]],
            limit=request["limit"],
            hybrid_bm25_weight=RAG_HYBRID_BM25_WEIGHT,
        )
        ids = None if result is None else [str(i) for i in (result.ids[0] if result.ids else [])]
        real_stdout.write(json.dumps({"ids": ids}) + "\n")
        real_stdout.flush()
    return 0


if __name__ == "__main__":
    sys.exit(main())
