"""Fixtures for the command-line tests: `source_db` for `ragfr embeddings` (tests.support.embmigrate)."""

from tests.support.embmigrate import source_db

__all__ = ["source_db"]
