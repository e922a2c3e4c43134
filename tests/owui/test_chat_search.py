"""ragfr.owui.runtime.chat_search, the body of Open WebUI's native hybrid step, driven with Open WebUI-shaped pieces.

The pieces stand in for Open WebUI's module (its async vector-DB client, `_search_result_to_documents`,
`RerankCompressor`) because this venv cannot import open_webui; each stand-in reproduces the stock
behaviour the step relies on, and the same code runs inside the real Open WebUI in
tests/owui/test_chat_under_load.py. What is checked: every failure becomes a marker passage (never None,
the legacy path), counted; without a reranking model no passage is embedded again and ragfr's order is
kept; the concurrency slots and their wait limit.
"""

from __future__ import annotations

import asyncio
import re
from dataclasses import dataclass, field
from typing import Any

import pytest

from ragfr import metrics
from ragfr.owui.runtime import chat_search
from ragfr.owui.runtime.chat_search import Limits, OwuiRetrieval, query_doc
from ragfr.owui.runtime.errors import SearchUnavailable
from ragfr.retrieval.passage_keys import INCIDENT, UNAVAILABLE_REASON
from ragfr.retrieval.passage_keys import SEARCH_UNAVAILABLE as UNAVAILABLE_KEY


@dataclass
class Doc:  # langchain's Document: what _search_result_to_documents makes
    page_content: str
    metadata: dict[str, Any]


@dataclass
class Client:
    """Open WebUI's ASYNC_VECTOR_DB_CLIENT in front of ragfr's adapter: a result, None, or a raise."""

    hits: list[tuple[str, float]] = field(default_factory=lambda: [("a", 0.03), ("b", 0.02), ("c", 0.01), ("d", 0.005)])
    raises: BaseException | None = None
    hold: asyncio.Event | None = None
    declines: bool = False
    calls: int = 0

    async def hybrid_search(self, **kw: Any) -> Any:
        self.calls += 1
        if self.hold is not None:
            await self.hold.wait()
        if self.raises is not None:
            raise self.raises
        return None if self.declines else self.hits


def to_documents(hits: list[tuple[str, float]]) -> list[Doc]:
    return [Doc(text, {"score": score, "ragfr_rrf_score": score}) for text, score in hits]


class Compressor:
    """RerankCompressor with a reranking function: the cross-encoder's scores, sorted (stock behaviour)."""

    def __init__(self, *, embedding_function: Any, top_n: int, reranking_function: Any, r_score: float) -> None:
        self.top_n, self.rerank = top_n, reranking_function

    async def acompress_documents(self, documents: list[Doc], query: str) -> list[Doc]:
        scores = self.rerank(query, documents)
        ranked = sorted(zip(documents, scores, strict=True), key=lambda x: x[1], reverse=True)[: self.top_n]
        return [Doc(d.page_content, {**d.metadata, "score": s}) for d, s in ranked]


@dataclass
class Embedder:
    delay_s: float = 0.0
    fails: bool = False
    returns_none: bool = False
    texts: list[Any] = field(default_factory=list)

    async def __call__(self, query: Any, prefix: str | None = None) -> Any:
        self.texts.append(query)
        await asyncio.sleep(self.delay_s)
        if self.fails:
            raise RuntimeError("Ollama: connection refused")
        return None if self.returns_none else [0.1, 0.2]


def owui(client: Client) -> OwuiRetrieval:
    return OwuiRetrieval(supports_native=lambda: True, client=client, query_prefix="query: ",
                         to_documents=to_documents, rerank_compressor=Compressor)


def ask(client: Client, embedder: Embedder, *, reranking_function: Any = None, k: int = 20,
        k_reranker: int = 3) -> Any:
    return query_doc(owui(client), collection_name="kb", query="Quel délai pour un vol ?",
                     embedding_function=embedder, k=k, reranking_function=reranking_function,
                     k_reranker=k_reranker, r=0.0, hybrid_bm25_weight=0.5)


@pytest.fixture(autouse=True)
def _limits(monkeypatch: pytest.MonkeyPatch) -> None:
    chat_search._slots.clear()  # slots are per event loop; each test sets its own limits
    monkeypatch.setenv(chat_search.ENV_WAIT_S, "0.3")
    monkeypatch.setenv(chat_search.ENV_EMBED_TIMEOUT_S, "0.5")


def unavailable(kind: str) -> float:
    return metrics.CHAT_SEARCH_UNAVAILABLE.labels(kind)._value.get()


def test_without_a_reranker_ragfrs_order_decides_and_nothing_is_embedded_again() -> None:
    embedder = Embedder()
    out = asyncio.run(ask(Client(), embedder))
    assert out["documents"] == [["a", "b", "c"]] and out["distances"] == [[0.03, 0.02, 0.01]]
    assert embedder.texts == ["Quel délai pour un vol ?"], "one embedding per question: the question's"


def test_with_a_reranker_open_webuis_compressor_orders_and_embeds_nothing() -> None:
    embedder = Embedder()
    out = asyncio.run(ask(Client(), embedder, reranking_function=lambda q, docs: [0.1, 0.9, 0.5, 0.2]))
    assert out["documents"] == [["b", "c", "d"]] and out["distances"] == [[0.9, 0.5, 0.2]]
    assert embedder.texts == ["Quel délai pour un vol ?"]


def test_k_below_k_reranker_keeps_k() -> None:
    assert asyncio.run(ask(Client(), Embedder(), k=2, k_reranker=3))["documents"] == [["a", "b"]]


@pytest.mark.parametrize(("client", "embedder", "kind", "reason"), [
    (Client(), Embedder(delay_s=2.0), "busy", "query embedding took longer than 0.5 s"),
    (Client(), Embedder(fails=True), "failed", "query embedding: RuntimeError: Ollama: connection refused"),
    (Client(), Embedder(returns_none=True), "failed", "returned no vector"),
    (Client(raises=SearchUnavailable("busy", "no database connection free")), Embedder(), "busy", "no database"),
    (Client(raises=SearchUnavailable("refused", "the query contains a NUL byte")), Embedder(), "refused", "NUL"),
    (Client(raises=ValueError("boom")), Embedder(), "failed", "search: ValueError: boom"),
], ids=["embed-timeout", "embed-error", "embed-none", "search-busy", "search-refused", "search-error"])
def test_every_failure_is_a_counted_marker_never_none(client: Client, embedder: Embedder, kind: str,
                                                      reason: str) -> None:
    before = unavailable(kind)
    out = asyncio.run(ask(client, embedder))
    assert out is not None, "None would send the question to Open WebUI's legacy path"
    meta = out["metadatas"][0][0]
    assert meta[UNAVAILABLE_KEY] == kind and reason in meta[UNAVAILABLE_REASON]
    # The passage's text (the one thing of a marker Open WebUI could show) names the kind and incident only.
    assert re.fullmatch(r"[0-9a-f]{8}", meta[INCIDENT])
    assert out["documents"][0][0] == f"ragfr: search {kind}: incident {meta[INCIDENT]}"
    assert out["distances"][0][0] > 1, "the marker must survive Open WebUI's merge (largest distance kept)"
    assert unavailable(kind) == before + 1


@pytest.mark.parametrize("query", ["sinistre " * 1000, "vol\x00", "  "])
def test_a_question_ragfr_will_not_search_is_refused_before_any_embedding(query: str) -> None:
    embedder, client = Embedder(), Client()
    out = asyncio.run(query_doc(owui(client), collection_name="kb", query=query, embedding_function=embedder, k=20,
                                reranking_function=None, k_reranker=3, r=0.0, hybrid_bm25_weight=0.5))
    assert out["metadatas"][0][0][UNAVAILABLE_KEY] == "refused"
    assert embedder.texts == [] and client.calls == 0


def test_a_reranker_error_is_a_failure() -> None:
    def broken(q: str, docs: list[Doc]) -> list[float]:
        raise RuntimeError("CUDA out of memory")

    out = asyncio.run(ask(Client(), Embedder(), reranking_function=broken))
    assert out["metadatas"][0][0][UNAVAILABLE_KEY] == "failed"
    assert "rerank: RuntimeError: CUDA out of memory" in out["metadatas"][0][0][UNAVAILABLE_REASON]


def test_none_only_where_ragfr_declines_the_database() -> None:
    assert asyncio.run(ask(Client(declines=True), Embedder())) is None
    no_native = OwuiRetrieval(lambda: False, Client(), None, to_documents, Compressor)
    assert asyncio.run(query_doc(no_native, collection_name="kb", query="q", embedding_function=Embedder(), k=3,
                                 reranking_function=None, k_reranker=3, r=0.0, hybrid_bm25_weight=0.5)) is None


def test_past_the_search_slots_a_question_gets_busy_within_the_wait(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(chat_search.ENV_SEARCH_CONCURRENCY, "2")

    async def scenario() -> list[Any]:
        hold = asyncio.Event()
        client = Client(hold=hold)
        first = [asyncio.create_task(ask(client, Embedder())) for _ in range(2)]
        while client.calls < 2:  # both slots taken
            await asyncio.sleep(0.01)
        # The two slots are released only after the third question returns: it came back without them.
        third = await ask(client, Embedder())
        hold.set()
        return [third, *await asyncio.gather(*first)]

    third, *firsts = asyncio.run(scenario())
    (slots,) = chat_search._slots.values()
    assert slots.search.free == 2 and slots.embed.free == slots.limits.embed_concurrency, "every slot came back"
    assert third["metadatas"][0][0][UNAVAILABLE_KEY] == "busy"
    # Ended by the slot wait's own 0.3 s, as the reason reports; no clock around it, which a busy machine
    # stretches (issue 37 item 9).
    assert "no search slot free within 0.3 s" in third["metadatas"][0][0][UNAVAILABLE_REASON]
    assert all(f["documents"] == [["a", "b", "c"]] for f in firsts), "the two in their slots finish normally"


def test_query_embeddings_in_flight_are_bounded(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(chat_search.ENV_EMBED_CONCURRENCY, "1")
    monkeypatch.setenv(chat_search.ENV_WAIT_S, "5")
    monkeypatch.setenv(chat_search.ENV_EMBED_TIMEOUT_S, "5")
    inflight, peak = [0], [0]

    class Counting(Embedder):
        async def __call__(self, query: Any, prefix: str | None = None) -> Any:
            inflight[0] += 1
            peak[0] = max(peak[0], inflight[0])
            await asyncio.sleep(0.05)
            inflight[0] -= 1
            return [0.1, 0.2]

    async def scenario() -> list[Any]:
        return await asyncio.gather(*[ask(Client(), Counting()) for _ in range(6)])

    assert all(o["documents"] == [["a", "b", "c"]] for o in asyncio.run(scenario()))
    assert peak[0] == 1


@pytest.mark.parametrize("bad", ["0", "-1", "x"])
def test_a_bad_limit_setting_is_named(bad: str) -> None:
    with pytest.raises(Exception, match=f"RAGFR_OWUI_WAIT_S={bad!r}"):
        Limits.from_env({chat_search.ENV_WAIT_S: bad})


def test_a_slot_survives_timeouts_and_cancellations_without_leaking() -> None:
    """Waiters that give up (the wait limit) or are cancelled (the analyst closed the page) never keep
    a slot: afterwards every slot is free and the next acquisition is immediate."""
    slot = chat_search.Slot(1)

    async def scenario() -> list[bool]:
        assert await slot.acquire(1)  # held
        timed_out = await asyncio.gather(*[slot.acquire(0.01) for _ in range(5)])
        cancelled = [asyncio.create_task(slot.acquire(10)) for _ in range(5)]
        await asyncio.sleep(0)  # all five wait
        slot.release()  # hands the slot to cancelled[0] ...
        cancelled[0].cancel()  # ... cancelled in the same turn: it must pass the slot on, to cancelled[1]
        cancelled[2].cancel()  # a plain waiter gives up
        for _ in range(3):
            await asyncio.sleep(0)
        assert cancelled[0].cancelled() and cancelled[2].cancelled()
        assert cancelled[1].done() and cancelled[1].result() is True
        for t in cancelled[3:]:
            t.cancel()
        await asyncio.gather(*cancelled, return_exceptions=True)
        slot.release()  # cancelled[1]'s slot
        return [*timed_out, slot.free == 1, await slot.acquire(0)]

    out = asyncio.run(scenario())
    assert out[:5] == [False] * 5 and out[5:] == [True, True]
