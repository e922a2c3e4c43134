"""The relevance an analyst reads beside each passage (issue 47 item 5), in `ragfr search --json` and, as
Open WebUI's `distances`, in the chat's citations (Open WebUI shows a value in [0, 1] as a percentage).

    relevance_i = evidence x rrf_i / rrf_top

`evidence` is the gate's reading of the whole search on a 0-1 scale: the fitted gate's probability p that the
top passages hold the answer (ragfr.gate.fitted, the p the chat's gate log prints; for a model nobody fitted,
the model-free gate's), or, where no fitted gate loads at all, the rank rule's input: the fused top score over
the best any passage can score (feature `rrf1`: 1 = rank 1 in every arm). `rrf_i / rrf_top` places the
passage against the best one of its search.

Why this shape and not the RRF score itself: RRF of the best possible passage is 2/61 = 0.0328, which Open
WebUI shows as « 3.28 % », read by an analyst as "barely relevant". Why not a per-passage probability: the
gate was fitted on searches, not passages, so p is the only calibrated number there is; scaling it by the
fused score keeps it (a) in [0, 1], (b) non-increasing along ragfr's fused order, which Open WebUI's
`merge_and_sort_query_results` re-sorts by, keeping the top k (ties keep the fused order: its sort is
stable), so the passages that reach the model do not change; (c) equal to p for the top passage of a search.
After a cross-encoder reorders the hits (`ragfr search --rerank`) the fused ratio is capped by the passages
before it (a running minimum), so the value never rises down the list either.

When the question's subject is named by no searched document (a strong absence, ragfr.gate.subject), the
gate lowers its verdict whatever p says; the evidence shown is then at most SUBJECT_ABSENT_CAP, so that a
caution « aucun des documents joints ne mentionne … » never sits beside a passage read as 75 % relevant.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from ragfr.errors import ConfigError
from ragfr.gate import fitted

SUBJECT_ABSENT_CAP = 0.5  # an analyst reads 50 % as "no better than even": the verdict was lowered


def search_evidence(embedding_model: str | None, evidence: Mapping[str, float], *,
                    subject_absent: bool = False) -> float:
    """The search's evidence in [0, 1]: the fitted gate's p for `embedding_model` when one decides for it (as
    ragfr.gate.rank.decide chooses), else the `rrf1` feature the rank rule reads. A calibration that cannot be
    read at all (ConfigError) is the decision's to report (the chat refuses, `ragfr ask` fails); the search
    still shows the rank rule's reading rather than fail for it. `subject_absent`: a strong absence lowers
    the verdict, so the reading is capped at SUBJECT_ABSENT_CAP."""
    value = _reading(embedding_model, evidence)
    return min(value, SUBJECT_ABSENT_CAP) if subject_absent else value


def _reading(embedding_model: str | None, evidence: Mapping[str, float]) -> float:
    try:
        model_gate = fitted.load(embedding_model) if embedding_model else None
    except ConfigError:
        model_gate = None
    if model_gate is not None and evidence:  # no features: the rank rule decides (ragfr.gate.rank.decide)
        return model_gate.probability(evidence)
    return _unit(float(evidence.get("rrf1", 0.0)))


def passages(evidence: float, rrf_scores: Sequence[float], rrf_top: float | None) -> list[float]:
    """Each passage's relevance, in the order of `rrf_scores` (the hits as returned); `rrf_top` is the
    search's best fused score (the fused first, which a reranker may have dropped)."""
    top = rrf_top if rrf_top and rrf_top > 0 else max(rrf_scores, default=0.0)
    out: list[float] = []
    ratio = 1.0
    for score in rrf_scores:
        ratio = min(ratio, _unit(score / top) if top > 0 else 0.0)
        out.append(_unit(evidence) * ratio)
    return out


def _unit(x: float) -> float:
    return min(1.0, max(0.0, x))
