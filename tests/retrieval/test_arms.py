"""A third retrieval arm, registered in this test only, goes through fusion, the hits, the evidence gate, the
search log, the metrics and the Open WebUI adapter without a line of theirs changing (issue 26 item 4).

The arm is a stand-in, on purpose: "shortest passage first" over the rows the hard filters pass. It is not a
ranking anyone should use; it has a known order, so each place it must reach can be checked exactly."""

from __future__ import annotations

import json
import logging
from typing import Any

import psycopg
import pytest
from prometheus_client import REGISTRY
from psycopg import sql

from ragfr.embed import load_embedder
from ragfr.filters.grammar import Condition
from ragfr.gate.rank import GateConfig, assess
from ragfr.ingest import ChunkConfig, Document, ingest_documents
from ragfr.owui.runtime.native import ranks_metadata
from ragfr.retrieval.arms import ArmBase, ArmQuery, Ranked
from ragfr.retrieval.config import SearchConfig
from ragfr.retrieval.hybrid import search
from ragfr.retrieval.types import ArmReport

E5 = "local:multilingual-e5-small"
TEXTS = {
    "vol": "Article 9 - Vol. En cas de vol, la plainte doit être déposée dans les 48 heures.",
    "franchise": "Article 8 - Franchise. Une franchise de 150 euros reste à la charge de l'assuré pour chaque "
    "dommage indemnisé, sauf catastrophe naturelle reconnue par arrêté.",
    "resiliation": "Article 15 - Résiliation. Le contrat peut être résilié chaque année à l'échéance.",
    "court": "Article 1 - Objet.",
}


class ShortestFirst(ArmBase):
    """The test's arm: the passing rows, shortest text first (ties by id); score = 1 / length. Its name, label
    and defaults (on, `config.k` deep, on the first connection, read by no evidence feature) are all it
    declares: nothing else in ragfr names it."""

    name = "short"
    metric_label = "short"

    def run(self, conn: psycopg.Connection[Any], query: ArmQuery) -> Ranked:
        where, params = query.filters.predicate("d")  # the hard constraints, pushed in like the other arms
        rows = conn.execute(sql.SQL("SELECT d.id, length(d.text) FROM document_chunk d WHERE {}"
                                    " ORDER BY length(d.text), d.id LIMIT %s").format(where),
                            [*params, self.depth(query.config)]).fetchall()
        report = ArmReport(self.name, self.depth(query.config), returned=len(rows), strategy="length")
        return Ranked([r[0] for r in rows], {r[0]: 1.0 / r[1] for r in rows}, report)


@pytest.fixture
def kb(migrated_db):
    e5 = load_embedder(E5, cache=False)
    dsn = migrated_db(dims=384, model=E5)
    with psycopg.connect(dsn, autocommit=True) as conn:
        docs = [Document(text=t, source=f"{name}.txt", metadata={"type": "contrat" if name != "court" else "note"})
                for name, t in TEXTS.items()]
        ingest_documents(conn, "kb", docs, e5, ChunkConfig(size=1000, overlap=0), progress=False)
        yield conn, e5


def test_a_third_arm_is_fused_gated_logged_counted_and_shown(kb, caplog: pytest.LogCaptureFixture) -> None:
    conn, e5 = kb
    arm = ShortestFirst()
    config = SearchConfig(k=4, rerank=False)
    before = REGISTRY.get_sample_value("ragfr_search_arm_duration_seconds_count", {"arm": "short"}) or 0.0
    with caplog.at_level(logging.INFO, logger="ragfr.search"):
        result = search(conn, "que faire en cas de vol ?", collections=["kb"], embedder=e5, config=config,
                        extra_arms=[arm])
    by_name = {h.metadata["name"].removesuffix(".txt"): h for h in result.hits}
    # Fusion: the third arm's ranks enter RRF like the others' (score = sum of 1/(k + rank) over the arms).
    assert by_name["court"].ranks["short"] == 1 and by_name["vol"].ranks["short"] == 2
    for hit in result.hits:
        assert set(hit.ranks) <= {"lexical", "semantic", "short"} and "short" in hit.ranks
        assert hit.rrf_score == pytest.approx(sum(1 / (config.rrf_k + r) for r in hit.ranks.values()))
        assert hit.scores["short"] == pytest.approx(1 / len(hit.text))
    assert [h.rrf_score for h in result.hits] == sorted((h.rrf_score for h in result.hits), reverse=True)
    assert by_name["vol"] is result.hits[0]  # first in every arm that returned it
    # The report, the timings, the JSON and the log name it.
    assert result.arms["short"].strategy == "length" and "short" in result.timings_ms
    assert list(result.arms) == ["lexical", "semantic", "short"]
    hit_json = result.to_json()["results"][0]
    assert hit_json["short_rank"] == 2 and hit_json["lexical_rank"] == 1 and "short_score" in hit_json
    [logged] = [json.loads(r.getMessage()) for r in caplog.records if r.name == "ragfr.search"]
    assert logged["arms"]["short"]["returned"] == 4
    # The metrics: its own label on the arm histogram.
    after = REGISTRY.get_sample_value("ragfr_search_arm_duration_seconds_count", {"arm": "short"})
    assert after == before + 1
    # The evidence gate judges the fused scores, whatever arms made them.
    evidence = assess(result.hits, GateConfig.for_scale("rrf"))
    assert evidence.top_score == result.hits[0].rrf_score and evidence.grounded
    # The Open WebUI adapter passes every arm's rank and score into the chat's metadata.
    meta = ranks_metadata(result, 0)
    assert meta["ragfr_short_rank"] == 2 and meta["ragfr_lexical_rank"] == 1 and meta["ragfr_rank"] == 1


def test_a_third_arm_gets_the_hard_filters(kb) -> None:
    conn, e5 = kb
    result = search(conn, "article", collections=["kb"], conditions=[Condition("type", "eq", ("contrat",))],
                    embedder=e5, config=SearchConfig(k=4, rerank=False), extra_arms=[ShortestFirst()])
    assert "court" not in {h.metadata["name"].removesuffix(".txt") for h in result.hits}
    assert result.arms["short"].returned == 3  # the note is filtered out inside the arm, not after it
