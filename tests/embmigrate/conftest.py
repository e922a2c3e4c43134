"""Fixtures for embedding-migration tests: `source_db`, a database in the `local:use-multilingual` space
(512 dims) holding a small corpus written the way Open WebUI writes it (tests.support.embmigrate)."""

from tests.support.embmigrate import source_db

__all__ = ["source_db"]
