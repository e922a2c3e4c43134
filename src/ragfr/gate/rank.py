"""The evidence gate: below a calibrated threshold there is no synthesis, only a diagnostic.

Two thresholds per score scale, because the scales share nothing:
  noise_floor         hits scoring below it are dropped from what is shown or cited;
  evidence_threshold  the TOP hit must reach it for `ask` to call the chat model at all (higher).

Scales
  rrf   Reciprocal Rank Fusion, k=60, over the arms that ran (two built in: ragfr.retrieval.arms). The rule
        asks two arms to agree, however many ran. Bounds with two: 1/(k+1) = 0.01639 for rank 1 in one arm only;
        2/(k+1) = 0.03279 for rank 1 in both. RRF is rank-based, so it cannot say "nothing relevant"
        on its own; what it can say is whether the two independent arms AGREE. Defaults, expressed as
        ranks so they follow k: evidence = rank 1 in one arm and within the top 3 of the other
        (1/61 + 1/63 = 0.03227); noise floor = a single-arm rank worse than 20 (1/80 = 0.0125).
        Calibrated (python -m ragfr_tools.eval.gate_calibration, 2026-11-30, e5-small, golden collection):
        of 73 answerable golden questions it answers 71 (97.3%); of 40 unanswerable questions
        (eval/gate/unanswerable.jsonl) it refuses 33 (82.5%: 16/20 off-domain, 17/20 near-domain).
        The first guess, top 10 instead of top 3 (0.03068), answered 100% but refused only 40%.
  cross-encoder
        raw logits of the cross-encoder that ran (`--rerank`, or Open WebUI's reranker; none by default),
        the defaults written for cross-encoder/ms-marco-MiniLM-L-6-v2's scale (sigmoid(logit) is the
        probability-like value Open WebUI's RAG_RELEVANCE_THRESHOLD filters on). Defaults: evidence 0.0
        (sigmoid 0.5), noise floor -4.0 (sigmoid 0.018). These come from that model's training objective
        (binary relevance, logit 0 = undecided), not from a calibration run on our data. Calibrate with
        `python -m ragfr_tools.eval.gate_calibration --reranker MODEL` where the model is, and set
        RAGFR_GATE_CE_EVIDENCE (docs/runbooks/calibrate-relevance-threshold.md). Until it is set, reranked
        searches are gated on RRF too (scale_for), in `ragfr ask` as in the chat.
"""

from __future__ import annotations

import os
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from enum import StrEnum
from typing import Any, Generic, Literal, Protocol, TypeVar

from ragfr.analysis.subject import Absence
from ragfr.gate import fitted, subject

Scale = Literal["rrf", "cross-encoder"]
T = TypeVar("T")


class ScoredHit(Protocol):
    """What the rule reads of a search's hit (ragfr.retrieval.types.Hit): the gate sits below retrieval, which
    computes its features (ragfr.gate.features), so it names the two scores instead of importing the type."""

    @property
    def rrf_score(self) -> float: ...

    @property
    def rerank_score(self) -> float | None: ...


H = TypeVar("H", bound=ScoredHit)

# The RRF rule in ranks, not in arms: evidence is one arm's rank 1 AND another arm's top 3 (the best two arms'
# contributions, whatever the number of arms that ran); noise is a single arm's rank worse than 20.
EVIDENCE_RANKS = (1, 3)
NOISE_RANK = 20


def rrf_thresholds(k: int) -> tuple[float, float]:
    """(noise_floor, evidence_threshold) on the RRF scale for constant k."""
    return 1.0 / (k + NOISE_RANK), sum(1.0 / (k + rank) for rank in EVIDENCE_RANKS)


@dataclass(frozen=True)
class GateConfig:
    scale: Scale
    noise_floor: float
    evidence_threshold: float

    @staticmethod
    def for_scale(scale: Scale, rrf_k: int = 60) -> GateConfig:
        if scale == "rrf":
            noise, evidence = rrf_thresholds(rrf_k)
            return GateConfig("rrf", noise, evidence)
        return GateConfig(
            "cross-encoder",
            float(os.environ.get("RAGFR_GATE_CE_NOISE", "-4.0")),
            float(os.environ.get("RAGFR_GATE_CE_EVIDENCE", "0.0")),
        )


class Outcome(StrEnum):
    """What the gate lets happen next. A new outcome (e.g. answer with a caution) is one member here; callers
    that only ask "is the model called?" read `Decision.grounded`."""

    ANSWER = "answer"  # the chat model is called with the kept passages
    # the chat model is called with the kept passages and told to say plainly when they do not hold the
    # answer; the analyst sees a caution line (issue 38 item 3: the fitted evidence gate is unsure)
    CAUTION = "caution"
    REFUSE = "refuse"  # no model call: a fixed message and the closest passages


@dataclass
class Decision(Generic[T]):
    """THE gate's result, for `ragfr ask` (T = Hit) and Open WebUI's chat (T = its passage), which only
    translates it for Open WebUI (ragfr.owui.runtime.chat_gate). `outcome` and `reason` are the decision; the rest is
    the evidence it was read from, printed by `ragfr ask --json` and the chat's gate log."""

    outcome: Outcome
    reason: str
    scale: Scale
    top_score: float | None
    evidence_threshold: float
    noise_floor: float
    kept: list[T] = field(default_factory=list)  # at or above the noise floor, in the search's order
    scored: list[tuple[T, float | None]] = field(default_factory=list)  # every candidate with its score
    # which rule decided: "evidence" (the fitted gate of the search's embedding model, ragfr.gate.fitted:
    # `probability` is its p) or "rank" (the RRF / cross-encoder threshold rule above)
    rule: str = "rank"
    probability: float | None = None
    # The question's subject that no searched document names (ragfr.gate.subject), when it changed the outcome
    # (`subject_changed`: "answer -> caution" or "caution -> refuse") or accompanies a caution or refusal;
    # None beside an answer. Its French sentence is what the analyst reads (`reason_fr`).
    absence: Absence | None = None
    subject_changed: str | None = None

    @property
    def grounded(self) -> bool:
        """Whether the chat model is called."""
        return self.outcome is not Outcome.REFUSE

    @property
    def reason_fr(self) -> str | None:
        """Why, in French, for the analyst: « Aucun des documents joints ne mentionne « … ». » (or None)."""
        return self.absence.reason_fr() if self.absence is not None else None

    @classmethod
    def refused_unjudged(cls, reason: str, gate: GateConfig | None = None) -> Decision[T]:
        """A refusal with no search to judge (the search did not run, the gate itself failed): no score."""
        gate = gate or GateConfig.for_scale("rrf")
        return cls(Outcome.REFUSE, reason, gate.scale, None, gate.evidence_threshold, gate.noise_floor)

    def summary(self) -> dict[str, Any]:
        """The decision without its items: what every surface logs and reports."""
        return {"decision": self.outcome.value, "grounded": self.grounded, "reason": self.reason,
                "scale": self.scale, "top_score": self.top_score,
                "evidence_threshold": self.evidence_threshold, "noise_floor": self.noise_floor,
                "rule": self.rule, "probability": self.probability,
                "absent_subject": subject.to_json(self.absence), "subject_changed": self.subject_changed,
                "reason_fr": self.reason_fr}


def scale_for(reranked: bool) -> Scale:
    """The scale both `ragfr ask` and the chat gate on: the cross-encoder's only when a cross-encoder scored the
    passages AND its threshold was calibrated here (RAGFR_GATE_CE_EVIDENCE set). Its built-in default is read
    off the model's training objective, not measured, and principle 4 gates on calibrated thresholds only; RRF
    scores exist for every search, reranked or not."""
    return "cross-encoder" if reranked and os.environ.get("RAGFR_GATE_CE_EVIDENCE") else "rrf"


def score_of(hit: ScoredHit, scale: Scale) -> float:
    if scale == "cross-encoder":
        if hit.rerank_score is None:
            raise ValueError("cross-encoder scale needs reranked hits")
        return hit.rerank_score
    return hit.rrf_score


def _verdict(top: float | None, any_kept: bool, gate: GateConfig) -> tuple[Outcome, str]:
    """(outcome, reason) from the best score and whether any hit clears the noise floor."""
    if top is None:
        return Outcome.REFUSE, "no passage matched the query"
    if top < gate.evidence_threshold:
        return (Outcome.REFUSE,
                f"best {gate.scale} score {top:.5f} is below the evidence threshold {gate.evidence_threshold:.5f}")
    if not any_kept:
        return Outcome.REFUSE, "every passage is below the noise floor"
    return Outcome.ANSWER, f"best {gate.scale} score {top:.5f} >= evidence threshold {gate.evidence_threshold:.5f}"


def with_subject(outcome: Outcome, reason: str,
                 absence: Absence | None) -> tuple[Outcome, str, Absence | None, str | None]:
    """The subject rule on top of a verdict: (outcome, reason, the absence the analyst is told, what it changed).
    A strong absence (a head noun of the question's subject in no passage of the searched collections) lowers
    the verdict one step: an answer becomes a caution, a caution a refusal (a refusal stays one); with the rank
    rule, which never cautions, that makes its answers cautions. Another absence changes nothing and is only
    told beside a caution or refusal the gate reached by itself (ragfr.gate.subject says why)."""
    if absence is None:
        return outcome, reason, None, None
    if absence.strong and outcome is not Outcome.REFUSE:
        lower = Outcome.CAUTION if outcome is Outcome.ANSWER else Outcome.REFUSE
        changed = f"{outcome.value} -> {lower.value}"
        return lower, f"{reason}; subject rule {changed}: {absence.reason_fr()}", absence, changed
    if outcome is Outcome.ANSWER:
        return outcome, reason, None, None
    return outcome, f"{reason}; {absence.reason_fr()}", absence, None


def decide(scored: Sequence[tuple[T, float | None]], gate: GateConfig, top: float | None = None, *,
           evidence: Mapping[str, float] | None = None, embedding_model: str | None = None,
           absence: Absence | None = None) -> Decision[T]:
    """The one decision of `ragfr ask` (through `assess`) and of the chat (`ragfr.owui.runtime.chat_gate`), on the
    candidates in their order with their score on `gate.scale` (None: not scored on it). `top` is the search's
    best score, by default the best of `scored`; the chat passes the one ragfr stamped on every passage,
    because Open WebUI may have dropped the best passage before the gate sees them.

    `evidence`: the search's evidence features (SearchResult.evidence). On the RRF scale the fitted gate of
    `embedding_model` (ragfr.gate.fitted: the operator's, the package's for that model, else the model-free
    one) decides among answer, caution and refuse; only without features, or if the package lacks the
    model-free gate, the rank rule decides (answer or refuse) and its reason says why. A
    calibrated cross-encoder scale keeps its threshold: the fitted gate never read a cross-encoder score.

    `absence`: the question's subject no searched document names (SearchResult.absence), applied by
    `with_subject` whichever rule decided."""
    scored = list(scored)
    if top is None:
        top = max((s for _, s in scored if s is not None), default=None)
    kept = [item for item, score in scored if score is not None and score >= gate.noise_floor]
    model_gate = fitted.load(embedding_model) if embedding_model and gate.scale == "rrf" else None
    # An operator's calibration this version cannot read decides nothing, and every decision says so.
    note = fitted.calibration_note(embedding_model) if gate.scale == "rrf" else None
    outcome, reason = _verdict(top, bool(kept), gate)
    # An empty feature mapping is a search that computed none (a stand-in, an older stamp), not one whose
    # features are all zero: the fitted gate would read it as no evidence and refuse.
    if model_gate is None or not evidence or top is None or not kept:
        if gate.scale == "rrf" and embedding_model and top is not None and kept:
            reason += (f" (rank rule: no fitted evidence gate for {embedding_model})" if model_gate is None
                       else " (rank rule: the search carries no evidence features)")
        reason += f" [{note}]" if note else ""
        outcome, reason, told, changed = with_subject(outcome, reason, absence)
        return Decision(outcome, reason, gate.scale, top, gate.evidence_threshold, gate.noise_floor, kept, scored,
                        absence=told, subject_changed=changed)
    verdict, p, why = model_gate.decide(evidence)
    why += f" [{note}]" if note else ""
    outcome, why, told, changed = with_subject(Outcome(verdict), why, absence)
    return Decision(outcome, why, gate.scale, top, gate.evidence_threshold, gate.noise_floor, kept,
                    scored, rule=fitted.RULE, probability=p, absence=told, subject_changed=changed)


def assess(hits: list[H], gate: GateConfig, *, evidence: Mapping[str, float] | None = None,
           embedding_model: str | None = None, absence: Absence | None = None) -> Decision[H]:
    """`ragfr ask`'s decision on a search's hits (and the tools' that replay it); pass the search's
    `evidence` and embedding model for the fitted gate, its `absence` for the subject rule (`decide`)."""
    return decide([(h, score_of(h, gate.scale)) for h in hits], gate, evidence=evidence,
                  embedding_model=embedding_model, absence=absence)
