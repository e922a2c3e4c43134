"""The model a chunk's `vmetadata.embedding_config` names, rewritten to follow its vector after a switch or
a rollback.

Both writers label each chunk with the model that embedded it: ragfr ingest as
`{"engine": "ragfr", "model": "<spec>"}`, Open WebUI as `{"engine": "ollama", "model": "<ollama model>"}`. The
label is not what searches trust (the `embedding_model` column is, checked by migration 0009's trigger), but
it is what people read: `ragfr search --json` prints it, and ragfr's Open WebUI adapter (owui/runtime/native.py)
hands it to Open WebUI with each source. A label naming a model the vector no longer comes from misleads
whoever checks which model answered. It is rewritten rather than dropped because Open WebUI writes the same
key into every chunk it embeds (routers/retrieval.py; it reads it nowhere): dropping it from ragfr's rows
would leave two kinds of rows, and ragfr ingest would write it again.

Why not in the switch transaction: `vmetadata` is GIN-indexed, so rewriting it is a non-HOT update that
inserts into every index of the table (both HNSW graphs included), about a backfill's write cost without the
model calls; under the switch's ACCESS EXCLUSIVE lock that would stop searches for minutes at a million
rows, where the switch is renames only. Nor in the backfill: until the switch commits the label must keep
naming the live model, and a rollback before the switch must leave vmetadata untouched. So it runs right
after the switch (and after a rollback's swap back), in committed batches that Open WebUI's writes and
searches never wait for. It rewrites only rows whose vector IS of the new model (the `embedding_model`
column) and whose label names the old one, so it is idempotent, a re-run finishes an interrupted pass, and
labels written after the switch or naming a third model are left alone.
"""

from __future__ import annotations

import json
from dataclasses import dataclass

import psycopg
from psycopg import sql

from ragfr import stop
from ragfr.embed import parse_spec
from ragfr.embmigrate import names
from ragfr.embmigrate.faults import kill_point

# Rows per committed UPDATE: no model call per row, so larger than an embedding batch, still a short
# transaction (each row rewrites its index entries).
BATCH = 500
KEY = "embedding_config"
RAGFR_ENGINE = "ragfr"
# Open WebUI's label for an Ollama model (RAG_EMBEDDING_ENGINE=ollama, k8s.openwebui.owui_model).
OLLAMA_ENGINE = "ollama"


@dataclass(frozen=True)
class Rewrite:
    """Labels `{"engine": engine, "model": old}` become `{"engine": engine, "model": new}`."""

    engine: str
    old: str
    new: str

    @property
    def match(self) -> str:
        return json.dumps({KEY: {"engine": self.engine, "model": self.old}})


def rewrites(old_spec: str, new_spec: str) -> list[Rewrite]:
    """ragfr's labels always; Open WebUI's only between two ollama: models, the only ones it names (an
    Open WebUI label of another engine cannot be mapped to a ragfr spec, and is left as it was written)."""
    old, new = parse_spec(old_spec), parse_spec(new_spec)
    found = [Rewrite(RAGFR_ENGINE, old.model_id, new.model_id)]
    if old.backend == OLLAMA_ENGINE and new.backend == OLLAMA_ENGINE:
        found.append(Rewrite(OLLAMA_ENGINE, old.model, new.model))
    return found


def _pending(conn: psycopg.Connection, live_model: str, todo: list[Rewrite]) -> bool:
    # The GIN index on vmetadata (migration 0008) answers the containment: cheap when nothing is left.
    row = conn.execute(
        sql.SQL("SELECT EXISTS (SELECT 1 FROM {t} WHERE {m} = %s AND ({any}))").format(
            t=sql.Identifier(names.TABLE), m=sql.Identifier(names.MODEL),
            any=sql.SQL(" OR ").join([sql.SQL("vmetadata @> %s::jsonb")] * len(todo)),
        ),
        (live_model, *(r.match for r in todo)),
    ).fetchone()
    return bool(row and row[0])


def relabel(conn: psycopg.Connection, old_spec: str, new_spec: str, *, batch: int = BATCH, rounds: int = 5) -> int:
    """Rewrite the labels naming `old_spec` on rows whose live vector is `new_spec`'s; return how many.

    Autocommit connection: each batch commits on its own, and a stop request (stop.Stopped) is honoured
    between batches; what was committed stays, and the next call carries on."""
    todo = rewrites(old_spec, new_spec)
    live_model = parse_spec(new_spec).model_id
    select = sql.SQL("SELECT id FROM {t} WHERE id > %s ORDER BY id LIMIT %s").format(t=sql.Identifier(names.TABLE))
    first = sql.SQL("SELECT id FROM {t} ORDER BY id LIMIT %s").format(t=sql.Identifier(names.TABLE))
    update = sql.SQL(
        "UPDATE {t} SET vmetadata = jsonb_set(vmetadata, %s, to_jsonb(%s::text))"
        # Re-checked on the row version being updated: a concurrent edit of the same row wins.
        " WHERE id = ANY(%s) AND {m} = %s AND vmetadata @> %s::jsonb"
    ).format(t=sql.Identifier(names.TABLE), m=sql.Identifier(names.MODEL))
    written = 0
    # Passes walk the primary key (one range per batch, never re-reading rewritten rows); a row whose label
    # was put back behind the cursor (an old writer's re-upload) is caught by the next pass; `rounds` bounds
    # the passes against a writer that keeps putting old labels back.
    for _ in range(rounds):
        if not _pending(conn, live_model, todo):
            break
        cursor: str | None = None
        while True:
            rows = (conn.execute(first, (batch,)) if cursor is None
                    else conn.execute(select, (cursor, batch))).fetchall()
            if not rows:
                break
            ids = [str(r[0]) for r in rows]
            with conn.transaction():
                for r in todo:
                    written += conn.execute(update, ([KEY, "model"], r.new, ids, live_model, r.match)).rowcount
                kill_point("relabel-before-commit")
            cursor = ids[-1]
            stop.checkpoint()
    return written
