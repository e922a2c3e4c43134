"""Runs INSIDE .venv-owui (the real open-webui 0.12.4): executes a scenario against Open WebUI's own code.

Usage: python owui_probe.py SCENARIO.json RESULT.json

Which Open WebUI code runs (pristine site-packages or a patched copy) is decided by PYTHONPATH, set by
the test. Operations:
  insert  {collection, items: [{id, text, vector, metadata}]}          -> PgvectorClient.insert
  native  {collection, query, vectors, filter, limit, weight}          -> PgvectorClient.hybrid_search
  merged  {searches: [native ops], k}                                   -> each native search, then Open WebUI's
          utils.merge_and_sort_query_results over them (several collections searched for one question)
  legacy  {collection, query, vector, k, k_reranker, weight}           -> utils.query_doc_with_hybrid_search
          (native_hybrid_search=False; the embedding function returns the given vector: the test fixes
          the geometry; the reranker is a neutral stub returning equal scores, so the fused order stands)
Each result is {"ok": value} or {"error": "Type: message"}.
"""

from __future__ import annotations

import asyncio
import json
import sys
import traceback
from typing import Any


def _insert(client: Any, op: dict[str, Any]) -> Any:
    client.insert(collection_name=op["collection"], items=op["items"])
    return len(op["items"])


def _native(client: Any, op: dict[str, Any]) -> Any:
    result = client.hybrid_search(
        collection_name=op["collection"],
        query=op["query"],
        vectors=op.get("vectors") or [],
        filter=op.get("filter"),
        limit=op.get("limit", 10),
        hybrid_bm25_weight=op.get("weight", 0.5),
    )
    return None if result is None else result.model_dump()


def _merged(client: Any, op: dict[str, Any]) -> Any:
    from open_webui.retrieval import utils

    found = [_native(client, search) for search in op["searches"]]
    return utils.merge_and_sort_query_results([r for r in found if r is not None], k=op["k"])


def _legacy(op: dict[str, Any]) -> Any:
    from open_webui.retrieval import utils

    vector = op["vector"]

    async def embedding_function(query: Any, prefix: Any = None, user: Any = None) -> Any:
        return [vector for _ in query] if isinstance(query, list) else vector

    def neutral_reranker(query: str, documents: list[Any]) -> list[float]:
        return [1.0] * len(documents)

    return asyncio.run(
        utils.query_doc_with_hybrid_search(
            collection_name=op["collection"],
            collection_result=None,
            query=op["query"],
            embedding_function=embedding_function,
            k=op["k"],
            reranking_function=neutral_reranker,
            k_reranker=op["k_reranker"],
            r=0.0,
            hybrid_bm25_weight=op["weight"],
            native_hybrid_search=False,
        )
    )


def main(scenario_path: str, result_path: str) -> int:
    with open(scenario_path, encoding="utf-8") as f:
        scenario = json.load(f)
    from open_webui.retrieval.vector.dbs.pgvector import PgvectorClient

    client = PgvectorClient()
    results = []
    for op in scenario["ops"]:
        try:
            if op["op"] == "insert":
                value = _insert(client, op)
            elif op["op"] == "native":
                value = _native(client, op)
            elif op["op"] == "merged":
                value = _merged(client, op)
            elif op["op"] == "legacy":
                value = _legacy(op)
            else:
                raise ValueError(f"unknown op {op['op']}")
            results.append({"ok": value})
        except Exception as exc:  # the test asserts on the message
            traceback.print_exc()
            results.append({"error": f"{type(exc).__name__}: {exc}"})
    with open(result_path, "w", encoding="utf-8") as f:
        json.dump({"results": results, "pgvector_module": sys.modules[PgvectorClient.__module__].__file__}, f,
                  default=str)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1], sys.argv[2]))
