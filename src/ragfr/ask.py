"""Grounded answers: search, the evidence gate, then (only then) the chat model, citing chunk ids."""

from __future__ import annotations

import os
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any, Protocol

from ragfr import metrics
from ragfr.errors import RagfrError
from ragfr.gate.rank import Decision, GateConfig, Outcome, assess, scale_for
from ragfr.retrieval.types import Hit, SearchResult

SYSTEM_PROMPT = (
    "Tu es un assistant qui répond en français, uniquement à partir des extraits fournis. "
    "Cite chaque extrait utilisé par son identifiant entre crochets, par exemple [id]. "
    "Si les extraits ne permettent pas de répondre, dis-le clairement au lieu de deviner."
)
# The gate is unsure (Outcome.CAUTION): the model is told so, and the analyst reads CAUTION above the answer.
CAUTION_PROMPT = (
    " Les extraits ne contiennent peut-être pas la réponse : s'ils ne la contiennent pas, commence ta réponse par "
    "« Les documents ne répondent pas à cette question. » et n'ajoute rien d'autre."
)
CAUTION = "Attention : les documents ne contiennent peut-être pas la réponse ; vérifiez les sources citées."


class ChatClient(Protocol):
    def chat(self, model: str, messages: list[dict[str, str]]) -> str: ...


class ChatModelError(RagfrError):
    """The chat model could not answer (server down, too slow, model missing): one line, no traceback."""


class OllamaChat:
    """The official `ollama` client; host from OLLAMA_HOST (or `host`). Every failure is a ChatModelError
    that names the server, the model and what to do; a call never waits longer than `timeout` seconds."""

    def __init__(self, host: str | None = None, timeout: float = 300.0) -> None:
        import httpx
        import ollama

        self.host = host or os.environ.get("OLLAMA_HOST") or "http://127.0.0.1:11434"
        self.timeout = timeout
        self._ollama = ollama
        self._timeout_error = httpx.TimeoutException
        self._client = ollama.Client(host=self.host, timeout=timeout)

    def chat(self, model: str, messages: list[dict[str, str]]) -> str:
        try:
            response = self._client.chat(model=model, messages=messages, options={"temperature": 0})
        except ConnectionError as exc:
            raise ChatModelError(
                f"cannot reach Ollama at {self.host} for chat model {model!r}: is the server running? "
                "(set OLLAMA_HOST to its address)"
            ) from exc
        except self._timeout_error as exc:
            raise ChatModelError(
                f"Ollama at {self.host} did not answer within {self.timeout:g} s with {model!r} "
                "(raise --chat-timeout for a slow CPU, or use a smaller model)"
            ) from exc
        except self._ollama.ResponseError as exc:
            hint = f"; pull it first: ollama pull {model}" if exc.status_code == 404 else ""
            raise ChatModelError(
                f"Ollama at {self.host} refused chat with {model!r}: HTTP {exc.status_code}: {exc.error}{hint}"
            ) from exc
        return str(response["message"]["content"])


@dataclass
class Answer:
    question: str
    grounded: bool
    answer: str | None
    citations: list[str]
    evidence: Decision[Hit]  # the gate's decision, the same type the chat translates
    search: SearchResult
    model: str | None = None
    diagnostic: dict[str, Any] = field(default_factory=dict)

    def scores(self) -> list[tuple[str, float | None]]:
        """Every hit's id and its score on the gate's scale, in the search's order."""
        return [(h.id, s) for h, s in self.evidence.scored]

    def to_json(self) -> dict[str, Any]:
        summary = self.evidence.summary()
        return {
            "question": self.question,
            "grounded": self.grounded,
            "caution": CAUTION if self.evidence.outcome is Outcome.CAUTION else None,
            "answer": self.answer,
            "citations": self.citations,
            "model": self.model,
            "evidence": {
                "decision": self.evidence.outcome.value,
                "rule": self.evidence.rule,
                "probability": self.evidence.probability,
                "scale": self.evidence.scale,
                "top_score": self.evidence.top_score,
                "evidence_threshold": self.evidence.evidence_threshold,
                "noise_floor": self.evidence.noise_floor,
                "scores": [{"id": i, "score": s} for i, s in self.scores()],
                "reason": self.evidence.reason,
                # the subject no searched document names, beside a caution or refusal (ragfr.gate.subject)
                "absent_subject": summary["absent_subject"],
                "subject_changed": summary["subject_changed"],
                "reason_fr": summary["reason_fr"],
            },
            "diagnostic": self.diagnostic,
            "search": self.search.to_json(),
        }


def build_messages(question: str, hits: Sequence[Hit], *, caution: bool = False) -> list[dict[str, str]]:
    context = "\n\n".join(f"[{h.id}]\n{h.text}" for h in hits)
    return [
        {"role": "system", "content": SYSTEM_PROMPT + (CAUTION_PROMPT if caution else "")},
        {"role": "user", "content": f"Extraits :\n\n{context}\n\nQuestion : {question}"},
    ]


def gate_search(result: SearchResult, gate: GateConfig | None = None) -> Decision[Hit]:
    """The gate's decision on a search, as `ragfr ask` and `ragfr gate check` take it: the scale of the hits
    (the cross-encoder's when calibrated), the search's evidence features and embedding model (the fitted
    gate of that model, else the rank rule), and the subject no searched document names (the subject rule)."""
    reranked = bool(result.hits) and result.hits[0].rerank_score is not None
    gate = gate or GateConfig.for_scale(scale_for(reranked), int(result.settings.get("rrf_k", 60)))
    return assess(result.hits, gate, evidence=result.evidence, embedding_model=result.settings.get("embedding_model"),
                  absence=result.absence)


def answer(result: SearchResult, chat: ChatClient, model: str, gate: GateConfig | None = None) -> Answer:
    """Gate the search result; call `chat` only when the evidence clears the threshold."""
    evidence = gate_search(result, gate)
    metrics.gate_decision("cli", evidence.outcome.value, evidence.rule)
    if not evidence.grounded:
        return Answer(
            question=result.query, grounded=False, answer=None, citations=[], evidence=evidence, search=result,
            diagnostic={"message": " ".join(filter(None, ["pas assez d'éléments dans les documents pour répondre.",
                                                          evidence.reason_fr])),
                        "reason": evidence.reason},
        )
    text = chat.chat(model, build_messages(result.query, evidence.kept, caution=evidence.outcome is Outcome.CAUTION))
    cited = [h.id for h in evidence.kept if f"[{h.id}]" in text] or [h.id for h in evidence.kept]
    return Answer(result.query, True, text, cited, evidence, result, model=model)
