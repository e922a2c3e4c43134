"""Declared filters and their partial HNSW indexes: one graph per frequent `key = value` filter.

A filter that passes a share s of the rows makes the shared graph's walk visit about 1/s times the
candidates of an unfiltered walk (pgvector filters after the walk). A partial index over the passing rows
alone (`WHERE vmetadata @> '{"type": "contrat"}'`) is walked like an unfiltered graph: at 100k chunks, the
vector arm of a 10 % filter costs a fraction of the shared graph's walk (docs/benchmarks.md#current-figures,
the 10 % filter row). PostgreSQL picks it
by itself for a query whose predicate implies the index's, which ragfr.filters.predicate ensures by
writing the same containment test (ragfr.filters.predicate.containment_predicate) into every query with
that equality; the vector arm's cost rule sizes the walk by the smaller graph (ragfr.retrieval.semantic).

The declarations live in `ragfr_filter_index` (migration 0014); the catalog says whether each index exists
and is valid. `sync` makes the catalog match the declarations: it builds each missing, invalid or stale
index (another precision or shape than the live idx_document_chunk_vector, e.g. after `ragfr migrate
--vector-index vector`) CONCURRENTLY, so reads and writes go on, and drops the indexes no longer declared.
An embedding migration builds the declared indexes of the new space itself and renames them at the switch
(ragfr.embmigrate), so `sync` leaves everything as it is while one is open.

A collection larger than COLLECTION_ROWS gets a graph of its own the same way (migration 0016), declared by
`sync` itself from the collections' row counts rather than by an operator: a partial index `WHERE
collection_name = '<name>'`, so that a search of that knowledge base walks its rows only and another
collection's upload never changes its answers (smaller ones are scored exactly, ragfr.retrieval.semantic).
Its declaration is forgotten, and its graph dropped, once the collection holds half the limit or less (the
gap keeps a collection near the limit from being built and dropped in turn).
"""

from __future__ import annotations

import hashlib
import logging
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import psycopg
from psycopg import sql

from ragfr.db import names, phases
from ragfr.errors import ConfigError, DatabaseError
from ragfr.filters.grammar import Condition, parse_condition
from ragfr.filters.predicate import containment_predicate
from ragfr.vector_index import build as hnsw
from ragfr.vector_index import lock, shape
from ragfr.vector_index.shape import Index

log = logging.getLogger(__name__)
PREFIX = "idx_document_chunk_vector_f_"
# Above this many chunks a collection is walked on its own graph, at or below it scored exactly: the one
# limit of both (ragfr.retrieval.config.COLLECTION_EXACT_ROWS is this value).
COLLECTION_ROWS = 10_000
# `key` of a collection's declaration (on_collection): the column its partial index filters on.
COLLECTION_KEY = "collection_name"
# An embedding migration's copies, as for idx_document_chunk_vector (ragfr.embmigrate.names).
NEXT, PREV = "_next", "_prev"


def index_name(key: str, value: str, on_collection: bool = False) -> str:
    """The partial index's name: fixed by the pair (and whether it is a collection's), short enough to take
    a `_next` / `_prev` suffix."""
    seed = (b"\x01collection\x00" if on_collection else b"") + key.encode() + b"\x00" + value.encode()
    return PREFIX + hashlib.sha256(seed).hexdigest()[:12]


def condition(key: str, value: str) -> Condition:
    return Condition(key, "eq", (value,))


def predicate(key: str, value: str, on_collection: bool = False) -> sql.Composed:
    """The index's WHERE clause. A collection's is the column's equality, which every search of that one
    collection implies (ragfr.filters.predicate writes `collection_name = ANY(...)` with its bound value)."""
    if on_collection:
        return sql.SQL("collection_name = {}").format(sql.Literal(value))
    where = containment_predicate(condition(key, value))
    if where is None:  # refused at declaration: unreachable for a stored row
        raise ConfigError(f"{key}={value}: a value starting with [ or {{ cannot have a filter index")
    return where


def parse_declaration(text: str) -> tuple[str, str]:
    """`key=value` as `ragfr search --filter` reads it; only a single equality can have its own graph."""
    c = parse_condition(text)
    if c.op != "eq":
        raise ConfigError(
            f"{text!r}: a filter index serves one equality, key=value; searches with a list (a|b) or a range "
            "walk the shared graph: declare each value that is searched alone")
    (value,) = c.values
    if containment_predicate(c) is None:
        raise ConfigError(f"{text!r}: a value starting with [ or {{ is matched by text only; it cannot have "
                          "a filter index")
    if len(value) > 1024:
        raise ConfigError(f"{text!r}: values of a filter index are at most 1024 characters")
    return c.key, value


@dataclass(frozen=True)
class Declared:
    key: str
    value: str
    index_name: str
    state: str  # ready | building | invalid | missing | stale
    rows: int | None  # entries in the index (pg_class.reltuples), when it exists
    bytes: int | None
    on_collection: bool = False  # a collection's own graph (declared by `sync`), not a metadata filter's

    @property
    def label(self) -> str:
        return f"collection {self.value}" if self.on_collection else f"{self.key}={self.value}"


@dataclass
class SyncReport:
    built: list[str] = field(default_factory=list)
    dropped: list[str] = field(default_factory=list)
    kept: list[str] = field(default_factory=list)
    skipped: str | None = None  # why nothing was done (an embedding migration is open)
    # collections whose own graph was declared / forgotten by this sync (their row counts crossed the limits)
    collections_declared: list[str] = field(default_factory=list)
    collections_forgotten: list[str] = field(default_factory=list)


def with_live_shape(join: str) -> str:
    """FROM the declarations (f) with their index (c, i) and the live index (live, lc), `join` being JOIN
    (declared and built) or LEFT JOIN (every declaration). SAME_SHAPE is true when the declared index has
    the live index's operator class and access method: one of another precision cannot answer the vector
    walk's ORDER BY. The one definition for `listing` and the vector arm's choice (ragfr.retrieval.semantic)."""
    return (f" FROM ragfr_filter_index f {join} pg_class c ON c.oid = to_regclass(f.index_name)"
            f" {join} pg_index i ON i.indexrelid = c.oid"
            f" {join} pg_index live ON live.indexrelid = to_regclass('{names.INDEX}')"
            f" {join} pg_class lc ON lc.oid = live.indexrelid")


SAME_SHAPE = "i.indclass[0] = live.indclass[0] AND c.relam = lc.relam"

_LIST = ("SELECT f.key, f.value, f.index_name, i.indisvalid, c.reltuples::bigint, pg_relation_size(c.oid),"
         f" {SAME_SHAPE}, f.index_name = ANY(%s), f.on_collection" + with_live_shape("LEFT JOIN")
         + " ORDER BY f.on_collection, f.key, f.value")


def require_registry(conn: psycopg.Connection[Any]) -> None:
    """DatabaseError naming the fix when the schema predates migration 0014 (or is no ragfr schema)."""
    if not _has_registry(conn):
        raise DatabaseError("this database has no ragfr_filter_index (migration 0014): run `ragfr migrate` first")


def listing(conn: psycopg.Connection[Any]) -> list[Declared]:
    """Every declaration with the state of its index."""
    building = [r[0] for r in conn.execute(
        "SELECT c.relname FROM pg_stat_progress_create_index p JOIN pg_class c ON c.oid = p.index_relid"
        " WHERE c.relname LIKE %s", (PREFIX + "%",))]
    out = []
    for key, value, name, valid, rows, size, same_shape, in_progress, on_collection in conn.execute(_LIST, (building,)):
        if valid is None:
            state = "missing"
        elif in_progress:
            state = "building"
        elif not valid:
            state = "invalid"
        elif not same_shape:
            state = "stale"
        else:
            state = "ready"
        out.append(Declared(key, value, name, state, None if rows is None else max(int(rows), 0),
                            None if size is None else int(size), bool(on_collection)))
    return out


def declare(conn: psycopg.Connection[Any], key: str, value: str) -> bool:
    """Record the declaration (True if it is new); `sync` builds its index."""
    row = conn.execute(
        "INSERT INTO ragfr_filter_index (key, value, index_name) VALUES (%s, %s, %s)"
        " ON CONFLICT (on_collection, key, value) DO NOTHING RETURNING 1",
        (key, value, index_name(key, value))).fetchone()
    return row is not None


def forget(conn: psycopg.Connection[Any], key: str, value: str) -> bool:
    """Remove the declaration (True if there was one); `sync` drops its index."""
    row = conn.execute("DELETE FROM ragfr_filter_index WHERE NOT on_collection AND key = %s AND value = %s"
                       " RETURNING 1", (key, value)).fetchone()
    return row is not None


def declare_collections(conn: psycopg.Connection[Any], limit: int, report: SyncReport) -> None:
    """Declare a graph for each collection of more than `limit` chunks that has none, forget those of
    collections down to `limit // 2` chunks or gone. Row counts: ragfr_collection_stats (kept by the BM25
    triggers), so no chunk is read."""
    rows = conn.execute(
        "SELECT s.collection_name, f.value IS NOT NULL FROM ragfr_collection_stats s"
        " LEFT JOIN ragfr_filter_index f ON f.on_collection AND f.value = s.collection_name"
        " WHERE s.n_docs > %s ORDER BY 1", (limit,)).fetchall()
    for name, declared in rows:
        if not declared:
            conn.execute("INSERT INTO ragfr_filter_index (key, value, index_name, on_collection)"
                         " VALUES (%s, %s, %s, true) ON CONFLICT DO NOTHING",
                         (COLLECTION_KEY, name, index_name(COLLECTION_KEY, name, on_collection=True)))
            report.collections_declared.append(name)
    gone = conn.execute(
        "DELETE FROM ragfr_filter_index f WHERE f.on_collection AND coalesce((SELECT s.n_docs FROM"
        " ragfr_collection_stats s WHERE s.collection_name = f.value), 0) <= %s RETURNING f.value",
        (limit // 2,)).fetchall()
    report.collections_forgotten.extend(sorted(str(r[0]) for r in gone))


def sync(conn: psycopg.Connection[Any], *, dsn: str | None = None, maintenance_work_mem: str | None = None,
         say: Callable[[str], None] = log.info, command: str = "ragfr filter-index sync",
         collection_rows: int | None = COLLECTION_ROWS) -> SyncReport:
    """Declare the large collections' graphs (more than `collection_rows` chunks; None: leave their
    declarations as they are), then build what is declared and not ready and drop what is built and not
    declared. `conn`: autocommit, owner of document_chunk. `dsn`: a second session reports a long build's
    progress every 15 s. `command`: the caller, as other commands are told while it holds the
    vector-index lock."""
    report = SyncReport()
    if collection_rows is not None:
        declare_collections(conn, collection_rows, report)
        for name in report.collections_declared:
            say(f"collection {name} holds more than {collection_rows} chunks: it gets a graph of its own")
        for name in report.collections_forgotten:
            say(f"collection {name} holds {collection_rows // 2} chunks or fewer (or is gone): its graph is "
                "dropped, its searches score it exactly")
    leftovers = _built(conn, "")
    if not leftovers and conn.execute("SELECT NOT EXISTS (SELECT FROM ragfr_filter_index)").fetchone() == (True,):
        return report  # nothing declared, nothing built: no lock, no check
    opened = phases.open_migration_id(conn)
    if opened is not None:
        report.skipped = (f"embedding migration #{opened} is open: it builds the declared filter indexes of "
                          "the new space itself; run `ragfr filter-index sync` again after it is finalized or "
                          "rolled back")
        say(report.skipped)
        return report
    live = shape.index(conn, names.INDEX)
    column = shape.column(conn, names.VECTOR)
    if live is None or not live.valid or column is None or column.dims <= 0:
        raise DatabaseError(f"{names.INDEX} is missing or invalid: run `ragfr migrate` first, which builds it")
    # Dropping an undeclared index CONCURRENTLY waits for older transactions like a build does: `ragfr
    # migrate`'s short session lock_timeout must not fail it (hnsw.build_concurrently covers the builds themselves).
    conn.execute("RESET lock_timeout")
    with lock.index_lock(conn, command):  # no embedding migration may start and copy a half-built set
        _sync_locked(conn, report, leftovers=leftovers, live=live, dims=column.dims, dsn=dsn,
                     maintenance_work_mem=maintenance_work_mem, say=say)
    return report


def _sync_locked(conn: psycopg.Connection[Any], report: SyncReport, *, leftovers: list[str], live: Index, dims: int,
                 dsn: str | None, maintenance_work_mem: str | None, say: Callable[[str], None]) -> None:
    declared = listing(conn)
    wanted = {d.index_name for d in declared}
    for name in leftovers:
        if name not in wanted:
            conn.execute(sql.SQL("DROP INDEX CONCURRENTLY IF EXISTS {}").format(sql.Identifier(name)))
            report.dropped.append(name)
            say(f"dropped {name} (no longer declared)")
    for d in declared:
        if d.state == "ready":
            report.kept.append(d.index_name)
            continue
        build(conn, d, d.index_name, names.VECTOR, live, dims, dsn=dsn,
              maintenance_work_mem=maintenance_work_mem, say=say)
        report.built.append(d.index_name)


def build(conn: psycopg.Connection[Any], d: Declared, name: str, column: str, like: Index, dims: int, *,
          dsn: str | None, maintenance_work_mem: str | None, say: Callable[[str], None]) -> None:
    """(Re)build `name` on `column`, shaped like the live index `like`, over the rows `d` declares."""
    where = predicate(d.key, d.value, d.on_collection)
    counted = conn.execute(sql.SQL("SELECT count(*) FROM document_chunk WHERE {}").format(where)).fetchone()
    rows = int(counted[0]) if counted else 0
    say(f"building {name} for {d.label} ({rows} rows, {like.precision}) concurrently: searches and writes "
        "go on meanwhile")
    meanwhile = ("are scored exactly or walk the shared graph" if d.on_collection
                 else "go on through the shared graph")
    hnsw.build_concurrently(
        conn, name, shape.create_index_statement(like, name, column, concurrently=True, dims=dims, where=where,
                                                 normalized=d.on_collection),
        maintenance_work_mem=maintenance_work_mem, progress_dsn=dsn, say=say,
        failure_hint=f"Searches of {d.label} {meanwhile}; `ragfr filter-index sync` "
                     "drops what is left and builds it again")
    say(f"built {name} for {d.label}")


def build_shadows(conn: psycopg.Connection[Any], like: Index, column: str, dims: int, *, maintenance_work_mem: str,
                  say: Callable[[str], None]) -> list[str]:
    """An embedding migration's copy of every declared filter's index, on the new space's `column`, named
    `<index>_next`: valid ones are kept (a resumed run), invalid ones rebuilt. The switch renames them
    (`rename_suffix`). Returns the names built."""
    built: list[str] = []
    if not _has_registry(conn):
        return built  # a schema from before migration 0014: nothing can be declared
    for d in listing(conn):
        name = d.index_name + NEXT
        row = conn.execute("SELECT indisvalid FROM pg_index WHERE indexrelid = to_regclass(%s)", (name,)).fetchone()
        if row is not None and row[0]:
            continue
        build(conn, d, name, column, like, dims, dsn=None, maintenance_work_mem=maintenance_work_mem, say=say)
        built.append(name)
    return built


def rename_suffix(conn: psycopg.Connection[Any], old: str, new: str) -> None:
    """ALTER INDEX ... RENAME every filter index named `<index><old>` to `<index><new>`, in the caller's
    transaction: the embedding migration's switch moves them with their columns (`` -> `_prev`, `_next` ->
    ``, and back)."""
    for name in _built(conn, old):
        base = name[: len(name) - len(old)] if old else name
        conn.execute(sql.SQL("ALTER INDEX {} RENAME TO {}").format(sql.Identifier(name), sql.Identifier(base + new)))


def _has_registry(conn: psycopg.Connection[Any]) -> bool:
    return conn.execute("SELECT to_regclass('ragfr_filter_index') IS NOT NULL").fetchone() == (True,)


def _built(conn: psycopg.Connection[Any], suffix: str) -> list[str]:
    """Names of the filter indexes on document_chunk named `<prefix><12 hex digits><suffix>`."""
    rows = conn.execute(
        "SELECT c.relname FROM pg_index i JOIN pg_class c ON c.oid = i.indexrelid"
        " WHERE i.indrelid = 'document_chunk'::regclass AND c.relname ~ %s ORDER BY 1",
        ("^" + PREFIX + "[0-9a-f]{12}" + suffix + "$",)).fetchall()
    return [str(r[0]) for r in rows]
