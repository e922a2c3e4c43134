"""Embedding failures a user can act on (server down, model missing, bad output)."""

from ragfr.errors import RagfrError


class EmbedderError(RagfrError):
    """The embedding backend is unreachable, lacks the model, or returned something unusable."""
