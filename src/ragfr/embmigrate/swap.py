"""The switch and its inverse: renames only, in the caller's transaction, under an ACCESS EXCLUSIVE lock.

Renaming (rather than copying vectors) keeps the switch to a few catalog updates however large the
corpus; an index follows its column, so the HNSW index built on vector_next becomes the live one by a
rename. After `forward`, Open WebUI's `document_chunk.vector` IS the new column, indexed by
`idx_document_chunk_vector`; `back` restores the very same original column, index and space row. The
declared filters' partial indexes (ragfr.vector_index.graphs) move the same way, `<name>_next` to `<name>`.
"""

from __future__ import annotations

import psycopg
from psycopg import sql

from ragfr.db.approle import move_column_privileges
from ragfr.embmigrate import columns, names
from ragfr.vector_index import graphs


def lock_writers(conn: psycopg.Connection) -> None:
    """SHARE: inserts, updates and deletes wait; searches (ACCESS SHARE) go on. Held while the last late
    rows are embedded, which can take model calls: only writers wait for those, never readers."""
    conn.execute(sql.SQL("LOCK TABLE {} IN SHARE MODE").format(sql.Identifier(names.TABLE)))


def lock_table(conn: psycopg.Connection) -> None:
    """ACCESS EXCLUSIVE, taken last and held only for the renames: readers wait for the swap alone."""
    conn.execute(sql.SQL("LOCK TABLE {} IN ACCESS EXCLUSIVE MODE").format(sql.Identifier(names.TABLE)))


def _set_space(conn: psycopg.Connection, model: str, dims: int) -> None:
    conn.execute(
        # clock_timestamp(): the end of the switch, which writes that name no model are checked against (0009).
        sql.SQL("UPDATE {} SET model = %s, dims = %s, updated_at = clock_timestamp()").format(
            sql.Identifier(names.SPACE_TABLE)
        ),
        (model, dims),
    )


def forward(conn: psycopg.Connection, *, to_model: str, to_dims: int, live_not_null: bool) -> None:
    """vector -> vector_prev, vector_next -> vector (columns, model columns, indexes), space -> new."""
    columns.rename_column(conn, names.VECTOR, names.VECTOR_PREV)
    columns.rename_column(conn, names.MODEL, names.MODEL_PREV)
    columns.rename_column(conn, names.VECTOR_NEXT, names.VECTOR)
    columns.rename_column(conn, names.MODEL_NEXT, names.MODEL)
    # Open WebUI's role may write the live vector column (ragfr.db.approle): that right follows the role.
    move_column_privileges(conn, names.TABLE, names.VECTOR_PREV, names.VECTOR)
    columns.rename_index(conn, names.INDEX, names.INDEX_PREV)
    columns.rename_index(conn, names.INDEX_NEXT, names.INDEX)
    graphs.rename_suffix(conn, "", graphs.PREV)
    graphs.rename_suffix(conn, graphs.NEXT, "")
    if live_not_null:
        # The live column's constraint moves with the role, not the data: Open WebUI's new rows carry
        # no old-space vector, so the kept column must accept NULL.
        columns.set_not_null(conn, names.VECTOR, True)
        columns.set_not_null(conn, names.VECTOR_PREV, False)
    columns.drop_guard(conn, names.TRIGGER_NEXT)
    columns.create_guard(conn, names.TRIGGER_PREV, names.FUNCTION_PREV)
    _set_space(conn, to_model, to_dims)


def back(conn: psycopg.Connection, *, from_model: str, from_dims: int, live_not_null: bool) -> None:
    """Undo `forward` and drop the new space: the original column, index and space row are live again."""
    columns.rename_column(conn, names.VECTOR, names.VECTOR_NEXT)
    columns.rename_column(conn, names.MODEL, names.MODEL_NEXT)
    columns.rename_index(conn, names.INDEX, names.INDEX_NEXT)
    columns.rename_column(conn, names.VECTOR_PREV, names.VECTOR)
    columns.rename_column(conn, names.MODEL_PREV, names.MODEL)
    move_column_privileges(conn, names.TABLE, names.VECTOR_NEXT, names.VECTOR)
    columns.rename_index(conn, names.INDEX_PREV, names.INDEX)
    graphs.rename_suffix(conn, "", graphs.NEXT)
    graphs.rename_suffix(conn, graphs.PREV, "")
    if live_not_null:
        columns.set_not_null(conn, names.VECTOR, True)
    columns.drop_guard(conn, names.TRIGGER_PREV)
    columns.drop_columns(conn, names.TRIGGER_NEXT, names.VECTOR_NEXT, names.MODEL_NEXT)
    _set_space(conn, from_model, from_dims)
