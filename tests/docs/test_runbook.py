"""The embedding-migration runbook, executed: every fenced block marked `runnable` runs in document order
against the private PostgreSQL with the offline models, and the `output` block after it must be what it
printed, except for the measured values (rates, sizes, times, pids) masked below. A runbook edited without
running it, or a message changed without the runbook, fails here.

Info strings: ```sh runnable [db=fresh|switched] [rc=N]``` runs the block with bash (`set -e`, stdout and
stderr together); `db=` first gives $DATABASE_URL a new database in that state (fresh: the corpus below in
the local:use-multilingual space; switched: the same, migrated to local:multilingual-e5-small), else the
block continues on the previous one's database; `rc=` is the exit status expected (default 0).
```sql runnable``` runs each statement and checks it returns what its `-- expect:` comment says.
```text output``` is the expected output of the runnable block before it.

RAGFR_RUNBOOK_WRITE=1 rewrites every output block from this run (then review the diff and commit it).
"""

from __future__ import annotations

import os
import re
import subprocess
import sys
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

import psycopg
from tests.support.embmigrate import SOURCE, TARGET, owui_insert
from tests.support.embmigrate_corpus import chunks
from tests.support.paths import REPO

from ragfr.embmigrate.options import MigrateOptions
from ragfr.embmigrate.runner import migrate

RUNBOOK = REPO / "docs" / "runbooks" / "embedding-migration.md"
N_CHUNKS = 12
_FENCE = re.compile(r"^```(?P<lang>\w+)(?P<info>[^\n]*)\n(?P<body>.*?)^```$", re.M | re.S)
# What legitimately differs between two runs: measurements and identities of the moment.
_VOLATILE = [
    (re.compile(r"\d[\d,]*(\.\d+)? chunks/s"), "N chunks/s"),
    (re.compile(r"about [\d,]+\.\d+ min"), "about N min"),
    (re.compile(r"[\d,]+\.\d MiB"), "N MiB"),
    (re.compile(r"elapsed \d\d:\d\d:\d\d, ETA [\d:?]+"), "elapsed T, ETA T"),
    (re.compile(r"\d{4}-\d\d-\d\d[ T]\d\d:\d\d:\d\d(\.\d+)?( ?(UTC|[+-]\d\d(:?\d\d)?))?"), "TIMESTAMP"),
    (re.compile(r"pid \d+"), "pid N"),
]


@dataclass
class Block:
    lang: str
    attrs: dict[str, str]
    body: str
    span: tuple[int, int]  # of the body, in the runbook text
    output: Block | None = None
    extra: list[str] = field(default_factory=list)


def _blocks(text: str) -> list[Block]:
    runnable: list[Block] = []
    for m in _FENCE.finditer(text):
        words = m.group("info").split()
        attrs = dict(w.split("=", 1) if "=" in w else (w, "") for w in words)
        block = Block(m.group("lang"), attrs, m.group("body"), m.span("body"))
        if "runnable" in attrs:
            runnable.append(block)
        elif m.group("lang") == "text" and "output" in attrs:
            assert runnable and runnable[-1].output is None, f"output block without its runnable block: {block.body}"
            runnable[-1].output = block
    return runnable


def _mask(text: str) -> str:
    for pattern, replacement in _VOLATILE:
        text = pattern.sub(replacement, text)
    return text.strip()


def _database(kind: str, migrated_db: Callable[..., str]) -> str:
    dsn = migrated_db(dims=512, model=SOURCE)
    with psycopg.connect(dsn, autocommit=True) as conn:
        owui_insert(conn, chunks(N_CHUNKS))
    if kind == "switched":
        migrate(MigrateOptions(to=TARGET, dsn=dsn, progress=False), lambda _: None)
    else:
        assert kind == "fresh", kind
    return dsn


def _run_sh(block: Block, dsn: str) -> tuple[int, str]:
    env = {**os.environ, "DATABASE_URL": dsn, "OMP_NUM_THREADS": "2",
           "PATH": f"{Path(sys.executable).parent}{os.pathsep}{os.environ.get('PATH', '')}"}
    proc = subprocess.run(["bash", "-e", "-o", "pipefail", "-c", block.body], stdout=subprocess.PIPE,
                          stderr=subprocess.STDOUT, text=True, env=env, timeout=600, check=False, cwd=REPO)
    return proc.returncode, proc.stdout


def _run_sql(block: Block, dsn: str) -> None:
    statements = re.findall(r"(.*?;)[ \t]*--\s*expect:\s*(.*?)\s*$", block.body, re.M | re.S)
    assert statements, "a runnable SQL block needs `-- expect:` comments"
    with psycopg.connect(dsn, autocommit=True) as conn:
        for statement, expected in statements:
            rows = conn.execute(statement.strip().removesuffix(";")).fetchall()  # type: ignore[call-overload]
            got = "; ".join("|".join(str(v) for v in row) for row in rows)
            assert expected in got, f"{statement.strip()}\nexpected {expected!r} in {got!r}"


def test_runbook_commands_and_outputs_are_what_a_real_run_does(migrated_db: Callable[..., str]) -> None:
    text = RUNBOOK.read_text(encoding="utf-8")
    blocks = _blocks(text)
    assert len(blocks) >= 8, "the runbook lost its runnable blocks"
    assert any(b.attrs.get("db") for b in blocks[:1]), "the first runnable block must say which database it needs"
    dsn = ""
    rewrites: list[tuple[tuple[int, int], str]] = []
    mismatches: list[str] = []
    for block in blocks:
        if "db" in block.attrs:
            dsn = _database(block.attrs["db"], migrated_db)
        if block.lang == "sql":
            _run_sql(block, dsn)
            continue
        assert block.lang == "sh", block.lang
        rc, out = _run_sh(block, dsn)
        expected_rc = int(block.attrs.get("rc", "0"))
        assert rc == expected_rc, f"{block.body.strip()}\nexited {rc}, the runbook says {expected_rc}:\n{out}"
        if block.output is None:
            continue
        if os.environ.get("RAGFR_RUNBOOK_WRITE") == "1":
            rewrites.append((block.output.span, out if out.endswith("\n") else out + "\n"))
        elif _mask(out) != _mask(block.output.body):
            mismatches.append(f"$ {block.body.strip()}\n--- runbook\n{block.output.body}--- real run\n{out}")
    if rewrites:
        for (start, end), new in sorted(rewrites, reverse=True):
            text = text[:start] + new + text[end:]
        RUNBOOK.write_text(text, encoding="utf-8")
    assert not mismatches, "runbook outputs differ from a real run (RAGFR_RUNBOOK_WRITE=1 regenerates them):\n\n" \
        + "\n\n".join(mismatches)
