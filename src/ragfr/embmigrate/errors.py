"""Failures of an embedding migration that an operator can act on (one line each, no traceback)."""

from ragfr.errors import RagfrError


class MigrationStateError(RagfrError):
    """The command does not apply to the migration's current phase (e.g. finalize before the switch)."""


class VerificationError(RagfrError):
    """The new space is incomplete or its index answers too differently from an exact search."""
