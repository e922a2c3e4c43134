"""The test double's "answer": pick the context sentence closest to the question, cite its source.

Overlap is counted on ragfr's French lexemes so inflected questions ("sinistres") meet the stemmed
sentence ("sinistre"). This is the double's own toy rule for a readable reply; retrieval (what reaches
the context) is entirely Open WebUI + ragfr upstream of it.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any

from ragfr.analysis.french import analyze

_SOURCE = re.compile(r"<source(?P<attrs>[^>]*)>(?P<body>.*?)</source>", re.DOTALL)
_ID = re.compile(r'\bid="(?P<id>[^"]*)"')
_SENTENCE_END = re.compile(r"(?<=[.!?])\s+")
NO_ANSWER = "Je ne trouve pas la réponse dans les documents fournis. (réponse extractive du double de test ragfr)"


@dataclass(frozen=True)
class Source:
    id: str | None
    text: str


def _text(message: dict[str, Any]) -> str:
    content = message.get("content", "")
    if isinstance(content, list):  # multimodal form: [{"type": "text", "text": ...}, ...]
        return " ".join(str(part.get("text", "")) for part in content if isinstance(part, dict))
    return str(content)


def _context(text: str) -> str:
    """Only what Open WebUI put inside <context>: its RAG template's instructions also spell `<source>`
    tags (as examples), which must not be read as passages."""
    start, end = text.rfind("<context>"), text.rfind("</context>")
    return text[start:end] if 0 <= start < end else text


def sources(messages: list[dict[str, Any]]) -> list[Source]:
    found = []
    for message in messages:
        for match in _SOURCE.finditer(_context(_text(message))):
            ident = _ID.search(match["attrs"])
            found.append(Source(ident["id"] if ident else None, match["body"].strip()))
    return found


def question(messages: list[dict[str, Any]]) -> str:
    """The last user message without any RAG template prepended to it."""
    for message in reversed(messages):
        if message.get("role") == "user":
            text = _text(message)
            return text.rsplit("</context>", 1)[-1].strip()
    return ""


def answer(messages: list[dict[str, Any]]) -> str:
    wanted = set(analyze(question(messages)))
    best: tuple[int, str, Source] | None = None
    for source in sources(messages):
        for sentence in _SENTENCE_END.split(source.text):
            overlap = len(wanted & set(analyze(sentence)))
            if overlap and (best is None or overlap > best[0]):
                best = (overlap, sentence.strip(), source)
    if best is None:
        return NO_ANSWER
    _, sentence, source = best
    return f"{sentence} [{source.id}]" if source.id else sentence
