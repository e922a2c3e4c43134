"""Errors meant for a human: the CLI prints them as one line and exits non-zero."""


class RagfrError(Exception):
    """A failure the user can act on. `str(err)` is the whole message; no traceback is shown."""

    exit_code = 2
    label = "error"  # the CLI prints `ragfr: LABEL: message`


class ConfigError(RagfrError):
    """Bad input or configuration (arguments, specs, filters)."""


class DatabaseError(RagfrError):
    """The database is unreachable, lacks our schema, or refused an operation."""


class EmbeddingSpaceError(RagfrError):
    """A model or dimension that does not match the stored embedding space."""


def first_line(exc: BaseException) -> str:
    """The first line of an error's message (libpq and drivers add context lines a log line does not want)."""
    text = str(exc).strip()
    return text.splitlines()[0].strip() if text else type(exc).__name__
