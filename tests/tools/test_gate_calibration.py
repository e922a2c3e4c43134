"""The gate calibration arithmetic, on hand-made scores (the real run is documented in
docs/retrieval-quality.md; it needs the golden collection and takes minutes)."""

from __future__ import annotations

import json
import math
from pathlib import Path

from tests.support.paths import REPO
from tests.support.standins import tiny_cross_encoder

from ragfr.gate.rank import rrf_thresholds
from ragfr_tools.eval.gate_calibration import Scored, best_threshold, main, operating_point, report


def _s(i: int, answerable: bool, rrf: float) -> Scored:
    return Scored(f"q{i}", answerable, rrf, None)


def test_operating_point_counts_both_sides() -> None:
    scored = [_s(1, True, 0.032), _s(2, True, 0.030), _s(3, False, 0.016), _s(4, False, 0.031)]
    p = operating_point(scored, 0.031, "rrf")
    assert (p.answered, p.refused) == (0.5, 0.5)
    p = operating_point(scored, 0.0305, "rrf")
    assert (p.answered, p.refused) == (0.5, 0.5)
    p = operating_point(scored, 0.017, "rrf")
    assert (p.answered, p.refused) == (1.0, 0.5)


def test_best_threshold_maximises_youden() -> None:
    scored = [_s(1, True, 0.0323), _s(2, True, 0.0325), _s(3, False, 0.0164), _s(4, False, 0.0300)]
    best = best_threshold(scored, "rrf")
    assert best.threshold == 0.0323 and best.answered == 1.0 and best.refused == 1.0
    out = report(scored)
    assert out["rrf"]["default"]["threshold"] == rrf_thresholds(60)[1]


def test_unanswerable_set_is_well_formed() -> None:
    rows = [json.loads(line) for line in (REPO / "eval" / "gate" / "unanswerable.jsonl").read_text().splitlines()]
    assert len(rows) == 40 and len({r["_id"] for r in rows}) == 40
    assert {r["kind"] for r in rows} == {"off-domain", "near-domain"}


def test_cross_encoder_scales_are_calibrated_at_one_operating_point() -> None:
    scored = [Scored("a", True, 0.03, None, 2.0), Scored("b", True, 0.03, None, 0.5),
              Scored("c", False, 0.02, None, -3.0), Scored("d", False, 0.02, None, 1.0)]
    out = report(scored)
    logit, sig = out["cross_encoder_logit"]["best"], out["cross_encoder_sigmoid"]["best"]
    # 0.5 answers 2/2 and refuses 1/2, 2.0 answers 1/2 and refuses 2/2: equal Youden, the refusing one wins.
    assert logit == {"threshold": 2.0, "answered": 0.5, "refused": 1.0}
    assert (sig["answered"], sig["refused"]) == (logit["answered"], logit["refused"])
    assert sig["threshold"] == 1 / (1 + math.exp(-logit["threshold"]))
    assert out["settings"] == {"RAG_RELEVANCE_THRESHOLD": round(sig["threshold"], 6),
                               "RAGFR_GATE_CE_EVIDENCE": logit["threshold"]}
    assert "settings" not in report([_s(1, True, 0.03)])  # no reranker ran: nothing to set


def test_calibration_run_with_a_reranker_end_to_end(migrated_db, tmp_path: Path, capsys) -> None:
    """The whole run on the golden set in our PostgreSQL, reranked by a STAND-IN cross-encoder (random
    weights: tests/support/standins.py). It checks the plumbing (every question reranked, the printed settings
    consistent with the scores), never the values, which only the real model gives."""
    dsn = migrated_db(dims=384, model="local:multilingual-e5-small")
    model = tiny_cross_encoder(tmp_path / "ce")
    assert main(["--dsn", dsn, "--reranker", str(model), "--json"]) == 0
    out = json.loads(capsys.readouterr().out)
    # Random weights reorder the top 3, so fewer golden questions count as answerable than with RRF alone.
    assert out["unanswerable"] == 40 and out["answerable"] > 0
    assert all(s["rerank"] is not None for s in out["scores"])
    best = out["cross_encoder_logit"]["best"]
    assert operating_point([Scored(**s) for s in out["scores"]], best["threshold"], "rerank").__dict__ == best
    assert out["settings"]["RAG_RELEVANCE_THRESHOLD"] == round(1 / (1 + math.exp(-best["threshold"])), 6)


def test_unloadable_reranker_is_a_one_line_error(tmp_path: Path, capsys) -> None:
    assert main(["--dsn", "postgresql://unused", "--reranker", str(tmp_path / "none")]) == 2
    err = capsys.readouterr().err.strip()
    assert err.startswith("gate_calibration: reranker") and "\n" not in err
