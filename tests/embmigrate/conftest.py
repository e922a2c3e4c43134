"""Fixtures for embedding-migration tests: a database in the `local:use-multilingual` space (512 dims)
holding a small corpus written the way Open WebUI writes it (its five columns only)."""

from __future__ import annotations

from collections.abc import Callable

import psycopg
import pytest
from tests.support.embmigrate import N_CHUNKS, SOURCE, owui_insert
from tests.support.embmigrate_corpus import chunks


@pytest.fixture
def source_db(migrated_db: Callable[..., str]) -> Callable[[int], str]:
    """Factory: DSN of a fresh database in the 512-dim USE space with `n` chunks."""

    def make(n: int = N_CHUNKS) -> str:
        dsn = migrated_db(dims=512, model=SOURCE)
        with psycopg.connect(dsn, autocommit=True) as conn:
            owui_insert(conn, chunks(n))
        return dsn

    return make

