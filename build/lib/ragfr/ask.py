"""Grounded answers: search, the evidence gate, then (only then) the chat model, citing chunk ids."""

from __future__ import annotations

import os
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any, Protocol

from ragfr.retrieval.gate import Evidence, GateConfig, Scale, assess
from ragfr.retrieval.types import Hit, SearchResult

SYSTEM_PROMPT = (
    "Tu es un assistant qui répond en français, uniquement à partir des extraits fournis. "
    "Cite chaque extrait utilisé par son identifiant entre crochets, par exemple [id]. "
    "Si les extraits ne permettent pas de répondre, dis-le clairement au lieu de deviner."
)


class ChatClient(Protocol):
    def chat(self, model: str, messages: list[dict[str, str]]) -> str: ...


class OllamaChat:
    """The official `ollama` client; host from OLLAMA_HOST (or `host`)."""

    def __init__(self, host: str | None = None) -> None:
        import ollama

        self._client = ollama.Client(host=host or os.environ.get("OLLAMA_HOST"))

    def chat(self, model: str, messages: list[dict[str, str]]) -> str:
        response = self._client.chat(model=model, messages=messages, options={"temperature": 0})
        return str(response["message"]["content"])


@dataclass
class Answer:
    question: str
    grounded: bool
    answer: str | None
    citations: list[str]
    evidence: Evidence
    search: SearchResult
    model: str | None = None
    diagnostic: dict[str, Any] = field(default_factory=dict)

    def to_json(self) -> dict[str, Any]:
        return {
            "question": self.question,
            "grounded": self.grounded,
            "answer": self.answer,
            "citations": self.citations,
            "model": self.model,
            "evidence": {
                "scale": self.evidence.scale,
                "top_score": self.evidence.top_score,
                "evidence_threshold": self.evidence.evidence_threshold,
                "noise_floor": self.evidence.noise_floor,
                "scores": [{"id": i, "score": s} for i, s in self.evidence.scores],
                "reason": self.evidence.reason,
            },
            "diagnostic": self.diagnostic,
            "search": self.search.to_json(),
        }


def build_messages(question: str, hits: Sequence[Hit]) -> list[dict[str, str]]:
    context = "\n\n".join(f"[{h.id}]\n{h.text}" for h in hits)
    return [
        {"role": "system", "content": SYSTEM_PROMPT},
        {"role": "user", "content": f"Extraits :\n\n{context}\n\nQuestion : {question}"},
    ]


def answer(result: SearchResult, chat: ChatClient, model: str, gate: GateConfig | None = None) -> Answer:
    """Gate the search result; call `chat` only when the evidence clears the threshold."""
    scale: Scale = "cross-encoder" if result.hits and result.hits[0].rerank_score is not None else "rrf"
    gate = gate or GateConfig.for_scale(scale, int(result.settings.get("rrf_k", 60)))
    evidence = assess(result.hits, gate)
    if not evidence.grounded:
        return Answer(
            question=result.query, grounded=False, answer=None, citations=[], evidence=evidence, search=result,
            diagnostic={"message": "pas assez d'éléments dans les documents pour répondre", "reason": evidence.reason},
        )
    text = chat.chat(model, build_messages(result.query, evidence.kept))
    cited = [h.id for h in evidence.kept if f"[{h.id}]" in text] or [h.id for h in evidence.kept]
    return Answer(result.query, True, text, cited, evidence, result, model=model)
