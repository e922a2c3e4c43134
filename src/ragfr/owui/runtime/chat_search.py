"""Open WebUI's native hybrid search step (`query_doc_with_native_hybrid_search`), as ragfr runs it.

The patch (patches/open-webui, edit `native-hybrid-step`) replaces that function's body with a call here.
Stock 0.12.4 wraps the query embedding, the search and its re-scoring in `except Exception: log.debug(...)`
and returns None, and a None sends the question on to the legacy hybrid search, which loads the whole
collection into the pod first: under a team's load, the slowest answer of all, with no word in the log.
Here, while ragfr serves the database:

- a failure never returns None. It returns one marker passage (`passage_keys.SEARCH_UNAVAILABLE` in its
  metadata) that the evidence gate (`ragfr.owui.runtime.chat_gate`) turns into an honest French message (busy,
  failed, refused) with no model call. The analyst sees the kind and a short incident id; the full reason
  is logged with that id as one JSON line (`search_unavailable`, then the gate's) and counted
  (`ragfr_chat_search_unavailable`). The only None
  left is where ragfr declines the database (PGVECTOR_PGCRYPTO, logged by the adapter);
- no re-scoring by embeddings. Without a reranking model, Open WebUI's `RerankCompressor` embeds every
  candidate passage again on every question to re-sort them by cosine; ragfr has already ranked them (RRF),
  so its order decides the top RAG_TOP_K_RERANKER. With a reranking model (a cross-encoder) Open WebUI's
  compressor runs as before: it calls that model and embeds nothing;
- backpressure instead of pile-ups. One process sends at most RAGFR_OWUI_EMBED_CONCURRENCY query
  embeddings to Ollama and runs at most RAGFR_OWUI_SEARCH_CONCURRENCY searches at once; a question waits at
  most RAGFR_OWUI_WAIT_S for its turn at each, then gets the busy message. The searches run in Open WebUI's
  default thread pool (a few threads per core): waiting here, on the event loop, keeps those threads for
  the searches that can run.
"""

from __future__ import annotations

import asyncio
import json
import logging
import os
import secrets
import time
import weakref
from collections import deque
from collections.abc import AsyncIterator, Awaitable, Callable, Mapping
from contextlib import asynccontextmanager
from dataclasses import dataclass
from typing import Any

from ragfr import metrics
from ragfr.errors import ConfigError, first_line
from ragfr.owui.runtime import provenance
from ragfr.owui.runtime.errors import SearchUnavailable
from ragfr.retrieval import passage_keys as keys
from ragfr.retrieval.hybrid import validate_query

log = logging.getLogger("ragfr.owui")

# Open WebUI merges the results of all collections and keeps the k with the largest distance: the marker's
# is above any score a passage can have (ragfr's relevance and a reranker's sigmoid <= 1), so it is never cut.
MARKER_DISTANCE = 1.0e6

ENV_EMBED_CONCURRENCY = "RAGFR_OWUI_EMBED_CONCURRENCY"
ENV_SEARCH_CONCURRENCY = "RAGFR_OWUI_SEARCH_CONCURRENCY"
ENV_WAIT_S = "RAGFR_OWUI_WAIT_S"
ENV_EMBED_TIMEOUT_S = "RAGFR_OWUI_EMBED_TIMEOUT_S"


@dataclass(frozen=True)
class Limits:
    """What one Open WebUI process may have in flight for chat searches, and how long a question waits."""

    embed_concurrency: int = 2
    search_concurrency: int = 4
    wait_s: float = 5.0
    embed_timeout_s: float = 20.0

    @classmethod
    def from_env(cls, env: Mapping[str, str] | None = None) -> Limits:
        env = os.environ if env is None else env
        base = cls()

        def number(name: str, default: float, integer: bool) -> float:
            raw = (env.get(name) or "").strip()
            if not raw:
                return default
            try:
                value = int(raw) if integer else float(raw)
            except ValueError:
                value = 0
            if value <= 0:
                raise ConfigError(f"{name}={raw!r}: give a positive {'whole ' if integer else ''}number")
            return value

        return cls(
            embed_concurrency=int(number(ENV_EMBED_CONCURRENCY, base.embed_concurrency, True)),
            search_concurrency=int(number(ENV_SEARCH_CONCURRENCY, base.search_concurrency, True)),
            wait_s=number(ENV_WAIT_S, base.wait_s, False),
            embed_timeout_s=number(ENV_EMBED_TIMEOUT_S, base.embed_timeout_s, False),
        )


@dataclass(frozen=True)
class OwuiRetrieval:
    """The pieces of Open WebUI's retrieval module the step needs, handed over by the patched body (ragfr
    cannot import open_webui: the patch runs inside it, the tests outside it)."""

    supports_native: Callable[[], bool]
    client: Any  # ASYNC_VECTOR_DB_CLIENT
    query_prefix: str | None  # RAG_EMBEDDING_QUERY_PREFIX
    to_documents: Callable[[Any], list[Any]]  # _search_result_to_documents
    rerank_compressor: Callable[..., Any]  # RerankCompressor


class Slot:
    """At most `size` holders at once, first come first served, with a wait limit per acquisition.

    Not asyncio.Semaphore under asyncio.wait_for: on Python 3.11 a timeout that races the grant can lose
    the permit, and a process that leaks permits under load ends up answering "busy" to everyone. Here a
    release hands its slot to the oldest waiter that has not given up, and a waiter cancelled just after
    being handed one gives it back. Everything runs on the event loop's thread: no lock needed."""

    def __init__(self, size: int) -> None:
        self.size = size
        self.free = size
        self._waiters: deque[asyncio.Future[bool]] = deque()

    async def acquire(self, wait_s: float) -> bool:
        if self.free > 0 and not self._waiters:
            self.free -= 1
            return True
        loop = asyncio.get_running_loop()
        granted: asyncio.Future[bool] = loop.create_future()
        self._waiters.append(granted)

        def give_up() -> None:
            if not granted.done():
                granted.set_result(False)

        timer = loop.call_later(wait_s, give_up)
        try:
            return await granted
        except asyncio.CancelledError:
            if granted.done() and not granted.cancelled() and granted.result():
                self.release()  # handed a slot in the same turn as the cancellation: pass it on
            raise
        finally:
            timer.cancel()
            if granted in self._waiters:
                self._waiters.remove(granted)

    def release(self) -> None:
        while self._waiters:
            waiter = self._waiters.popleft()
            if not waiter.done():
                waiter.set_result(True)
                return
        self.free += 1


class _Slots:
    """The process's two slots, one set per event loop (futures belong to one loop)."""

    def __init__(self, limits: Limits) -> None:
        self.limits = limits
        self.embed = Slot(limits.embed_concurrency)
        self.search = Slot(limits.search_concurrency)


_slots: weakref.WeakKeyDictionary[asyncio.AbstractEventLoop, _Slots] = weakref.WeakKeyDictionary()


def _slots_here() -> _Slots:
    loop = asyncio.get_running_loop()
    found = _slots.get(loop)
    if found is None:
        found = _slots[loop] = _Slots(Limits.from_env())
    return found


@asynccontextmanager
async def _turn(slot: Slot, wait_s: float, what: str) -> AsyncIterator[None]:
    if not await slot.acquire(wait_s):
        raise SearchUnavailable("busy", f"no {what} slot free within {wait_s:g} s")
    try:
        yield
    finally:
        slot.release()


async def _embed(embedding_function: Callable[..., Awaitable[Any]], query: str, prefix: str | None,
                 slots: _Slots) -> list[float]:
    limits = slots.limits
    async with _turn(slots.embed, limits.wait_s, "query-embedding"):
        try:
            vector = await asyncio.wait_for(embedding_function(query, prefix), limits.embed_timeout_s)
        except TimeoutError:
            raise SearchUnavailable(
                "busy", f"the query embedding took longer than {limits.embed_timeout_s:g} s") from None
        except Exception as err:
            raise SearchUnavailable("failed", f"query embedding: {type(err).__name__}: {first_line(err)}") from err
    # Open WebUI's Ollama client logs an HTTP error and returns None rather than raising.
    if not vector or not isinstance(vector, list):
        raise SearchUnavailable("failed", "query embedding: the embedding server returned no vector")
    return vector


def _ragfr_order(documents: list[Any], keep: int) -> dict[str, Any]:
    kept = documents[:keep]
    return {
        "distances": [[d.metadata.get("score") for d in kept]],
        "documents": [[d.page_content for d in kept]],
        "metadatas": [[d.metadata for d in kept]],
    }


async def _reranked(owui: OwuiRetrieval, documents: list[Any], query: str, *, embedding_function: Any,
                    reranking_function: Any, k: int, k_reranker: int, r: float) -> dict[str, Any]:
    """Open WebUI's own reranking step, as stock 0.12.4 runs it (the cross-encoder's scores and order)."""
    compressor = owui.rerank_compressor(
        embedding_function=embedding_function, top_n=k_reranker, reranking_function=reranking_function, r_score=r,
    )
    compressed = await compressor.acompress_documents(documents, query)
    items = [(d.metadata.get("score"), d.page_content, d.metadata) for d in compressed]
    if k < k_reranker:
        items = sorted(items, key=lambda x: x[0], reverse=True)[:k]
    return {"distances": [[i[0] for i in items]], "documents": [[i[1] for i in items]],
            "metadatas": [[i[2] for i in items]]}


def new_incident() -> str:
    """A short id the analyst can quote and the operator finds in this process's log (8 hex digits)."""
    return secrets.token_hex(4)


def unavailable_result(collection_name: str, err: SearchUnavailable, incident: str) -> dict[str, Any]:
    """One marker passage in Open WebUI's result shape: the gate refuses with the kind's message. The reason
    rides along inside the process for the gate's log; the gate never hands it on (no passage survives a
    marker), and the passage's text holds only the kind and the incident."""
    meta = {keys.SEARCH_UNAVAILABLE: err.kind, keys.UNAVAILABLE_REASON: err.reason, keys.INCIDENT: incident,
            keys.COLLECTION: collection_name, "name": "ragfr", "source": "ragfr",
            keys.PROVENANCE: provenance.issue()}  # the gate reads only markers made here
    return {"distances": [[MARKER_DISTANCE]], "documents": [[f"ragfr: search {err.kind}: incident {incident}"]],
            "metadatas": [[meta]]}


async def query_doc(
    owui: OwuiRetrieval,
    *,
    collection_name: str,
    query: str,
    embedding_function: Callable[..., Awaitable[Any]],
    k: int,
    reranking_function: Any,
    k_reranker: int,
    r: float,
    hybrid_bm25_weight: float,
) -> dict[str, Any] | None:
    """The body of Open WebUI's `query_doc_with_native_hybrid_search`: its result dict, a marker passage
    when ragfr cannot search, None only when the database is not ragfr's to search."""
    if not owui.supports_native():
        return None
    started = time.perf_counter()
    stage = "setup"
    incident = ""  # named only on failure
    try:
        try:
            validate_query(query)  # before the embedding: a question refused anyway costs Ollama nothing
        except ConfigError as err:
            raise SearchUnavailable("refused", str(err)) from err
        slots = _slots_here()
        vectors: list[list[float]] = []
        if hybrid_bm25_weight < 1:
            stage = "embed"
            vectors = [await _embed(embedding_function, query, owui.query_prefix, slots)]
        stage = "search"
        async with _turn(slots.search, slots.limits.wait_s, "search"):
            result = await owui.client.hybrid_search(
                collection_name=collection_name, query=query, vectors=vectors, limit=k,
                hybrid_bm25_weight=hybrid_bm25_weight,
            )
            if result is None:
                return None  # ragfr declines this database (PGVECTOR_PGCRYPTO); the adapter logged why
            documents = owui.to_documents(result)
            if not documents:
                return {"distances": [[]], "documents": [[]], "metadatas": [[]]}
            if reranking_function is None:
                return _ragfr_order(documents, min(k, k_reranker))
            stage = "rerank"
            return await _reranked(owui, documents, query, embedding_function=embedding_function,
                                   reranking_function=reranking_function, k=k, k_reranker=k_reranker, r=r)
    except SearchUnavailable as err:
        failure = err
    except ConfigError as err:  # a setting of this process (Limits.from_env)
        failure = SearchUnavailable("failed", str(err))
    except Exception as err:
        incident = new_incident()
        log.exception("ragfr: chat search failed at %s for %s (incident %s)", stage, collection_name, incident)
        failure = SearchUnavailable("failed", f"{stage}: {type(err).__name__}: {first_line(err)}")
    metrics.chat_search_unavailable(failure.kind)
    incident = incident or new_incident()
    log.warning(json.dumps({
        "event": "search_unavailable", "incident": incident, "kind": failure.kind, "stage": stage,
        "reason": failure.reason, "collection": collection_name,
        "ms": round((time.perf_counter() - started) * 1000, 1),
    }, ensure_ascii=False))
    return unavailable_result(collection_name, failure, incident)
