"""Writing documents into `document_chunk`: chunk, skip what is already stored, embed the rest, and
replace each source's stale chunks in the same transaction that adds its new ones."""

from __future__ import annotations

import json
import logging
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

import psycopg
from psycopg.types.json import Jsonb

from ragfr import metrics
from ragfr.db.vmetadata import RESERVED_PREFIX, reserved_keys
from ragfr.embed import Embedder, check_space, read_space
from ragfr.errors import ConfigError, DatabaseError, EmbeddingSpaceError, first_line
from ragfr.ingest.chunking import Chunk, ChunkConfig, check_chunk_size, chunk_text
from ragfr.ingest.documents import Document
from ragfr.ingest.ids import chunk_id, content_hash
from ragfr.progress import Progress

log = logging.getLogger(__name__)

# Keys ragfr writes into every chunk's vmetadata. Caller metadata may not set them: `source` is the
# identity used to replace a changed file, the others describe the chunk itself.
RESERVED_KEYS = frozenset({"source", "hash", "chunk_index", "start_index", "doc_id", "embedding_config"})
# Sources are embedded and written in groups of at least this many chunks: big enough to keep the
# embedder's batches full, small enough that an interruption loses little work.
WRITE_GROUP_CHUNKS = 256


@dataclass
class IngestReport:
    documents: int = 0
    sources: int = 0
    chunks: int = 0  # chunks the documents produce now
    inserted: int = 0  # new rows written
    unchanged: int = 0  # already stored with the same id: not embedded again
    updated: int = 0  # of those, rows whose metadata changed (new --meta, moved chunk): metadata rewritten
    deleted: int = 0  # stale rows of a changed source, removed
    concurrent: int = 0  # rows another ingest of the same source added or removed while this one embedded
    empty: list[str] = field(default_factory=list)  # documents with no text: no chunk (old ones removed)
    chunk_ids: dict[tuple[str, str], list[str]] = field(default_factory=dict)  # (source, doc_id) -> ids

    def add(self, other: IngestReport) -> None:
        """Fold the report of a later call (the next file) into this one."""
        for name in ("documents", "sources", "chunks", "inserted", "unchanged", "updated", "deleted", "concurrent"):
            setattr(self, name, getattr(self, name) + getattr(other, name))
        self.empty.extend(other.empty)
        self.chunk_ids.update(other.chunk_ids)


@dataclass
class _Row:
    id: str
    text: str
    metadata: dict[str, Any]


@dataclass
class _SourcePlan:
    source: str
    rows: list[_Row]
    stale: list[str] = field(default_factory=list)
    todo: list[_Row] = field(default_factory=list)
    retag: list[_Row] = field(default_factory=list)


def ingest_documents(
    conn: psycopg.Connection[Any],
    collection: str,
    docs: Iterable[Document],
    embedder: Embedder,
    config: ChunkConfig | None = None,
    progress: bool = True,
    *,
    metadata: Mapping[str, Any] | None = None,
    chunker: Callable[[str], list[Chunk]] | None = None,
) -> IngestReport:
    """Chunk `docs` exactly as `chunk_text` does and store them in `collection`.

    `chunker` replaces `chunk_text` (the evaluation measures Open WebUI's splitter with it); production
    ingestion never passes one.

    Idempotent: a chunk already stored (same id) is neither embedded nor written again. A source whose
    content changed loses its old chunks in the transaction that writes the new ones. `metadata` is
    added to every chunk (the CLI's --meta). The embedder must match the database's embedding space.
    """
    _check_collection(collection)
    extra = dict(metadata or {})
    _check_metadata(extra, "--meta")
    check_space(conn, embedder)
    config = config or ChunkConfig()
    check_chunk_size(config, embedder.model_id, getattr(embedder, "max_input_tokens", None))  # duck-typed embedders
    report = IngestReport()
    split = chunker or (lambda text: chunk_text(text, config))
    plans = _plan(collection, list(docs), embedder, split, extra, report)
    _find_existing(conn, collection, plans, report)
    total = sum(len(p.todo) for p in plans)
    # A bar on a terminal, plain lines in a log (`kubectl logs`, nohup, a pipe): never carriage returns there.
    with Progress(total, f"embedding with {embedder.model_id}", enabled=progress) as bar:
        group: list[_SourcePlan] = []
        for plan in plans:
            if not plan.todo and not plan.stale and not plan.retag:
                report.unchanged += len(plan.rows)
                continue
            group.append(plan)
            if sum(len(p.todo) for p in group) >= WRITE_GROUP_CHUNKS:
                _write(conn, collection, group, embedder, report, bar)
                group = []
        if group:
            _write(conn, collection, group, embedder, report, bar)
    return report


def _check_collection(collection: str) -> None:
    if not isinstance(collection, str) or not collection.strip():
        raise ConfigError("collection name must be a non-empty string")
    if "\0" in collection:
        raise ConfigError("collection name contains a NUL byte")
    if len(collection) > 255:
        raise ConfigError(f"collection name is {len(collection)} characters long; at most 255 are allowed")


def _check_metadata(meta: Mapping[str, Any], where: str) -> None:
    clash = sorted(RESERVED_KEYS & set(meta))
    if clash:
        raise ConfigError(
            f"{where} sets reserved metadata key(s) {', '.join(clash)}; ragfr fills "
            f"{', '.join(sorted(RESERVED_KEYS))} itself"
        )
    # Refused rather than dropped: the operator wrote them (--meta, a JSON line), and a silent drop would hide
    # a metadata filter that can never match. Open WebUI's uploads drop them instead (ragfr.owui.runtime.vectors).
    gate_keys = reserved_keys(meta)
    if gate_keys:
        raise ConfigError(
            f"{where} sets metadata key(s) {', '.join(gate_keys)}: keys starting with {RESERVED_PREFIX!r} are "
            "reserved for what the chat's evidence gate reads, never stored with a chunk; rename them"
        )


def _plan(
    collection: str,
    docs: list[Document],
    embedder: Embedder,
    split: Callable[[str], list[Chunk]],
    extra: dict[str, Any],
    report: IngestReport,
) -> list[_SourcePlan]:
    by_source: dict[str, _SourcePlan] = {}
    seen_docs: set[tuple[str, str]] = set()
    for doc in docs:
        key = (doc.source, doc.doc_id)
        if key in seen_docs:
            raise ConfigError(f"document {doc.doc_id!r} of {doc.source} appears twice")
        seen_docs.add(key)
        _check_metadata(doc.metadata, f"metadata of {doc.source} {doc.doc_id}".rstrip())
        plan = by_source.setdefault(doc.source, _SourcePlan(doc.source, []))
        doc_hash = content_hash(doc.text)
        occurrences: dict[str, int] = {}
        ids: list[str] = []
        for chunk in split(doc.text):
            occurrence = occurrences.get(chunk.text, 0)
            occurrences[chunk.text] = occurrence + 1
            row_id = chunk_id(collection, doc.source, doc.doc_id, chunk.text, occurrence)
            meta: dict[str, Any] = {
                **extra,
                **doc.metadata,
                "source": doc.source,
                "name": doc.name,
                "hash": doc_hash,
                "chunk_index": chunk.index,
                "start_index": chunk.start,
                "embedding_config": {"engine": "ragfr", "model": embedder.model_id},
            }
            if doc.doc_id:
                meta["doc_id"] = doc.doc_id
            plan.rows.append(_Row(row_id, chunk.text, meta))
            ids.append(row_id)
        report.chunk_ids[key] = ids
        if not ids:
            report.empty.append(f"{doc.source} {doc.doc_id}".rstrip())
        report.documents += 1
    report.sources = len(by_source)
    report.chunks = sum(len(p.rows) for p in by_source.values())
    return list(by_source.values())


def _stored(
    cur: psycopg.Cursor[Any], collection: str, sources: list[str]
) -> dict[str, dict[str, Any]]:
    """source -> {chunk id: stored vmetadata} for these sources."""
    existing: dict[str, dict[str, Any]] = {}
    for start in range(0, len(sources), 1000):
        cur.execute(
            "SELECT id, vmetadata->>'source', vmetadata FROM document_chunk "
            "WHERE collection_name = %s AND vmetadata->>'source' = ANY(%s)",
            (collection, sources[start : start + 1000]),
        )
        for row_id, source, stored_meta in cur.fetchall():
            existing.setdefault(source, {})[row_id] = stored_meta
    return existing


def _compare(plan: _SourcePlan, stored: dict[str, Any]) -> None:
    wanted = {r.id for r in plan.rows}
    plan.stale = sorted(set(stored) - wanted)
    plan.todo = [r for r in plan.rows if r.id not in stored]
    # Same text, different metadata (new --meta values, a chunk moved by an edit above it): the
    # vector is still right, only vmetadata is rewritten.
    plan.retag = [r for r in plan.rows if r.id in stored and stored[r.id] != r.metadata]


def _find_existing(
    conn: psycopg.Connection[Any], collection: str, plans: list[_SourcePlan], report: IngestReport
) -> None:
    """A first look, without locks, to know what to embed; `_write` looks again under the sources' locks."""
    try:
        with conn.cursor() as cur:
            existing = _stored(cur, collection, [p.source for p in plans])
        if not conn.autocommit:
            conn.commit()  # do not hold a snapshot open while embedding
    except psycopg.Error as exc:
        _rollback(conn)
        raise DatabaseError(f"cannot read existing chunks of collection {collection!r}: {exc}") from exc
    for plan in plans:
        _compare(plan, existing.get(plan.source, {}))


def _lock_sources(cur: psycopg.Cursor[Any], collection: str, sources: list[str]) -> None:
    """Per-source transaction advisory locks, taken in one global order (no deadlock between two ingests):
    two ingests of one source serialize from the read of its stored chunks to their commit, so the
    second one sees, and replaces, what the first one wrote. A hash collision only serializes more."""
    for source in sorted(set(sources)):
        cur.execute(
            "SELECT pg_advisory_xact_lock(hashtextextended(%s, 0))", (json.dumps(["ragfr-ingest", collection, source]),)
        )


def _write(
    conn: psycopg.Connection[Any],
    collection: str,
    group: list[_SourcePlan],
    embedder: Embedder,
    report: IngestReport,
    bar: Progress,
) -> None:
    # Embedded before taking any lock: the slow part never blocks another ingest.
    vectors: dict[str, list[float]] = {}
    _embed_into(vectors, [r for p in group for r in p.todo], embedder, bar)
    try:
        with conn.transaction(), conn.cursor() as cur:
            _lock_sources(cur, collection, [p.source for p in group])
            # Embedding took time: if the space changed meanwhile (an embedding migration switched), these
            # vectors belong to no space the database serves. Nothing of this group is written.
            _recheck_space(conn, embedder, report)
            stored = _stored(cur, collection, [p.source for p in group])
            for plan in group:
                before = ({r.id for r in plan.todo}, set(plan.stale))
                _compare(plan, stored.get(plan.source, {}))
                after = ({r.id for r in plan.todo}, set(plan.stale))
                report.concurrent += len(before[0] ^ after[0]) + len(before[1] ^ after[1])
                report.unchanged += len(plan.rows) - len(plan.todo)
            rows = [r for p in group for r in p.todo]
            # Rows another ingest removed meanwhile were not embedded above: embed them now (rare, and cached).
            _embed_into(vectors, [r for r in rows if r.id not in vectors], embedder, None)
            stale = [i for p in group for i in p.stale]
            if stale:
                cur.execute(
                    "DELETE FROM document_chunk WHERE collection_name = %s AND id = ANY(%s)", (collection, stale)
                )
                report.deleted += cur.rowcount
            inserted = 0
            for row in rows:
                # pgvector parses its text form; this avoids a client-side type adapter dependency.
                cur.execute(
                    "INSERT INTO document_chunk (id, vector, collection_name, text, vmetadata, embedding_model) "
                    "VALUES (%s, %s::vector, %s, %s, %s, %s) ON CONFLICT (id) DO NOTHING",
                    (row.id, _vector_literal(vectors[row.id]), collection, row.text, Jsonb(row.metadata),
                     embedder.model_id),
                )
                inserted += cur.rowcount
            report.inserted += inserted
            for row in (r for p in group for r in p.retag):
                cur.execute(
                    "UPDATE document_chunk SET vmetadata = %s WHERE id = %s AND collection_name = %s",
                    (Jsonb(row.metadata), row.id, collection),
                )
                report.updated += cur.rowcount
    except psycopg.Error as exc:
        _rollback(conn)
        if isinstance(exc, psycopg.errors.CheckViolation) and "ragfr: vector" in str(exc):
            metrics.space_mismatch("model")  # the writer-model check of migration 0009 refused the rows
        raise DatabaseError(f"writing chunks into collection {collection!r} failed: {first_line(exc)}") from exc


def _recheck_space(conn: psycopg.Connection[Any], embedder: Embedder, report: IngestReport) -> None:
    space = read_space(conn)
    if (space.model, space.dims) != (embedder.model_id, embedder.dims):
        metrics.space_mismatch("model")
        raise EmbeddingSpaceError(
            f"the embedding space changed to {space.model} ({space.dims} dims) while this ingest embedded with "
            f"{embedder.model_id}: nothing more was written (the {report.inserted} chunk(s) stored before the switch "
            "are re-embedded by the migration); re-run the same command, which now uses the new model"
        )


def _embed_into(
    vectors: dict[str, list[float]], rows: list[_Row], embedder: Embedder, bar: Progress | None
) -> None:
    for start in range(0, len(rows), embedder.batch_size):
        batch = rows[start : start + embedder.batch_size]
        vectors.update(zip((r.id for r in batch), embedder.embed_passages([r.text for r in batch]), strict=True))
        if bar is not None:
            bar.update(len(batch))


def _vector_literal(vector: list[float]) -> str:
    return "[" + ",".join(map(repr, vector)) + "]"


def _rollback(conn: psycopg.Connection[Any]) -> None:
    if not conn.autocommit:
        try:
            conn.rollback()
        except psycopg.Error:
            pass

