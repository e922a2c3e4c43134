"""check_space against a real migrated database: the stored space's embedder passes, any other model or
dimension is refused with both sides named and the runbook pointed to."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

import psycopg
import pytest

from ragfr.embed import check_space, load_embedder, read_space
from ragfr.errors import DatabaseError, EmbeddingSpaceError

E5 = "local:multilingual-e5-small"


@dataclass
class _Named:
    """Only a model id and a dimension: what check_space compares (no vectors involved)."""

    model_id: str
    dims: int


def test_matching_embedder_passes(migrated_db: Callable[..., str]) -> None:
    with psycopg.connect(migrated_db(dims=384, model=E5)) as conn:
        space = check_space(conn, load_embedder(E5, cache=False))
        assert (space.model, space.dims) == (E5, 384)


@pytest.mark.parametrize(
    ("model_id", "dims"),
    [("local:use-multilingual", 512), ("ollama:all-minilm", 384), (E5, 512)],
    ids=["other-model-other-dims", "other-model-same-dims", "same-name-other-dims"],
)
def test_other_space_is_refused(migrated_db: Callable[..., str], model_id: str, dims: int) -> None:
    with psycopg.connect(migrated_db(dims=384, model=E5)) as conn:
        with pytest.raises(EmbeddingSpaceError) as err:
            check_space(conn, _Named(model_id, dims))
        message = str(err.value)
        assert f"{model_id} ({dims} dims)" in message and f"{E5} (384 dims)" in message
        assert "docs/runbooks/embedding-migration.md" in message
        conn.execute("SELECT 1")  # the connection is still usable


def test_database_without_schema_is_a_clear_error(empty_db: str) -> None:
    with psycopg.connect(empty_db) as conn:
        with pytest.raises(DatabaseError, match="ragfr migrate"):
            read_space(conn)
        assert conn.execute("SELECT 1").fetchone() == (1,)  # not left in an aborted transaction
