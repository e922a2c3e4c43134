"""Errors raised inside Open WebUI's process (the adapter, the chat steps) and by the Open WebUI driver."""

from __future__ import annotations

from ragfr.errors import RagfrError


class VectorLengthError(RagfrError, ValueError):
    """An embedding whose dimension differs from the stored space: rejected, never padded or truncated."""


class OwuiError(RagfrError):
    """An Open WebUI process that ragfr drives (the evaluation's stock-path driver) failed or exited."""


class SearchUnavailable(RagfrError):
    """ragfr could not search for a chat question. The chat gets an honest message and no passage, never
    Open WebUI's legacy path (which would load the whole collection into the pod on top of the trouble).

    kind: `busy` (no free slot or connection within the wait limit while the database answers, a statement or
    embedding timeout: try again), `unavailable` (the database does not answer: connection refused or lost),
    `failed` (an error: the operator must look), `refused` (a question ragfr will not search as given: too
    long, a NUL byte, a bad filter, empty)."""

    KINDS = ("busy", "unavailable", "failed", "refused")

    def __init__(self, kind: str, reason: str) -> None:
        if kind not in self.KINDS:
            raise ValueError(f"unknown kind {kind!r}")
        super().__init__(reason)
        self.kind = kind
        self.reason = reason


class DocumentNotStored(RagfrError):
    """Open WebUI could not write a document's chunks to the vector table (rolled back: none of them kept).
    Its text is what the analyst reads, in French with an incident id; the driver's error is only logged under
    that id (`ragfr.owui.runtime.uploads`)."""

    def __init__(self, message: str, kind: str, incident: str) -> None:
        super().__init__(message)
        self.kind = kind
        self.incident = incident
