"""What an operator hits running `ragfr ingest` by hand (issue 17): racing ingests of one source, bad Unicode,
oversized chunks, special files, empty and no-op runs. Real database, real e5 model."""

from __future__ import annotations

import os
import threading
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

import psycopg
import pytest

from ragfr.cli import main
from ragfr.cli.ingest import parse_meta
from ragfr.embed import Embedder, load_embedder
from ragfr.errors import ConfigError
from ragfr.ingest import ChunkConfig, Document, ingest_documents

E5 = "local:multilingual-e5-small"
V1 = "Article 1\nLa franchise est de 150 euros par sinistre.\n\nArticle 2\nLe vol se déclare sous 48 heures."
V2 = "Article 1\nLa franchise est de 300 euros par sinistre.\n\nArticle 2\nLe vol se déclare sous deux jours."


@pytest.fixture
def dsn(migrated_db: Callable[..., str]) -> str:
    return migrated_db(dims=384, model=E5)


def _stored(dsn: str) -> list[tuple[str, str]]:
    with psycopg.connect(dsn) as conn:
        return conn.execute(
            "SELECT vmetadata->>'hash', text FROM document_chunk WHERE collection_name = 'c' ORDER BY 1, 2"
        ).fetchall()


class _MeetBeforeWriting:
    """The real e5 embedder, except that each ingest's FIRST embedding call waits until both ingests got
    there: both have then read the stored chunks (still empty) and neither has written. Only this
    synchronisation is added; every vector is e5's own."""

    def __init__(self, inner: Embedder, barrier: threading.Barrier) -> None:
        self._inner, self._barrier, self._first = inner, barrier, True
        self.model_id, self.dims, self.batch_size = inner.model_id, inner.dims, inner.batch_size
        self.max_input_tokens = getattr(inner, "max_input_tokens", None)  # absent before issue 17

    def embed_passages(self, texts: Sequence[str]) -> list[list[float]]:
        if self._first:
            self._first = False
            self._barrier.wait(timeout=60)
        return self._inner.embed_passages(texts)


def _race(dsn: str, texts: tuple[str, str]) -> list[Any]:
    e5 = load_embedder(E5, cache=False)
    barrier = threading.Barrier(2)
    reports: list[Any] = [None, None]
    errors: list[BaseException] = []

    def run(i: int) -> None:
        try:
            with psycopg.connect(dsn) as conn:
                doc = Document(text=texts[i], source="/data/contrat.md")
                reports[i] = ingest_documents(conn, "c", [doc], _MeetBeforeWriting(e5, barrier),
                                              ChunkConfig(size=60, overlap=0), progress=False)
        except BaseException as exc:  # re-raised in the test thread
            errors.append(exc)

    threads = [threading.Thread(target=run, args=(i,)) for i in (0, 1)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(120)
    assert not errors, errors
    return reports


def test_two_versions_ingested_at_once_leave_one_version(dsn: str) -> None:
    reports = _race(dsn, (V1, V2))
    stored = _stored(dsn)
    hashes = {h for h, _ in stored}
    assert len(hashes) == 1, f"both versions stored: {stored}"
    # The version that committed last is whole, and its report says it replaced the other one.
    last = next(r for r in reports if r.deleted)
    assert last.concurrent == last.deleted and len(stored) == last.chunks == last.inserted


def test_the_losing_side_of_a_race_reports_what_it_found(dsn: str) -> None:
    reports = _race(dsn, (V1, V1))
    assert len(_stored(dsn)) == reports[0].chunks
    first, second = sorted(reports, key=lambda r: r.inserted, reverse=True)
    assert (first.inserted, first.unchanged) == (first.chunks, 0)
    assert (second.inserted, second.unchanged) == (0, second.chunks), "the loser must say its chunks were there"
    assert (first.concurrent, second.concurrent) == (0, second.chunks)


def _ingest(capsys: pytest.CaptureFixture[str], dsn: str, *args: str) -> tuple[int, str, str]:
    rc = main(["ingest", "--dsn", dsn, "--collection", "c", "--no-progress", *args])
    captured = capsys.readouterr()
    return rc, captured.out, captured.err


def test_lone_surrogate_is_refused_with_file_and_line(dsn: str, tmp_path: Path, capsys) -> None:
    path = tmp_path / "faq.jsonl"
    path.write_text('{"id": "a", "text": "correct"}\n{"id": "b", "text": "cass\\ud800e"}\n', encoding="utf-8")
    rc, _, err = _ingest(capsys, dsn, str(path))
    assert rc == 2
    assert err.strip() == (f'ragfr: error: {path}:2: "text" contains a lone surrogate \\ud800 at character 4 '
                           "(not valid Unicode; fix the producer of this file)")
    assert _stored(dsn) == []


def test_chunk_size_is_bounded_by_the_embedders_window(dsn: str, tmp_path: Path, capsys) -> None:
    path = tmp_path / "a.txt"
    path.write_text(V1, encoding="utf-8")
    rc, _, err = _ingest(capsys, dsn, "--chunk-size", "1000000", str(path))
    assert rc == 2
    assert err.strip() == ("ragfr: error: --chunk-size 1000000 is more than local:multilingual-e5-small embeds whole: "
                           "at most 2048 characters (512 tokens x ~4 characters per French token)")
    assert _stored(dsn) == []
    rc, _, err = _ingest(capsys, dsn, "--chunk-size", "2048", str(path))
    assert rc == 0, err


def test_a_fifo_is_refused_by_name_without_blocking(dsn: str, tmp_path: Path, capsys) -> None:
    fifo = tmp_path / "pipe.txt"
    os.mkfifo(fifo)
    rc, _, err = _ingest(capsys, dsn, str(fifo))
    assert rc == 2
    assert err.strip() == (f"ragfr: error: {fifo}: is a FIFO (named pipe), not a regular file; "
                           "only files and directories can be ingested")


def test_empty_file_and_no_op_ingest_say_so(dsn: str, tmp_path: Path, capsys) -> None:
    empty, full = tmp_path / "vide.txt", tmp_path / "plein.txt"
    empty.write_text(" \n\n", encoding="utf-8")
    full.write_text(V1, encoding="utf-8")
    rc, out, err = _ingest(capsys, dsn, str(empty))
    assert rc == 0
    assert err.strip() == f"ragfr: warning: {empty}: empty (no text), no chunk stored"
    assert out.strip().endswith("nothing changed: the files hold no text")
    rc, out, err = _ingest(capsys, dsn, str(full))
    assert rc == 0 and "nothing changed" not in out
    rc, out, err = _ingest(capsys, dsn, str(full))
    assert rc == 0 and err == ""
    assert out.strip().splitlines()[-1].startswith("nothing changed: all ") and "were already stored" in out


def test_meta_keys_are_limited_like_filter_keys(dsn: str, tmp_path: Path, capsys) -> None:
    assert parse_meta(["k" * 128 + "=v"]) == {"k" * 128: "v"}
    with pytest.raises(ConfigError, match="1-128 characters"):
        parse_meta(["k" * 129 + "=v"])
    path = tmp_path / "a.txt"
    path.write_text(V1, encoding="utf-8")
    rc, _, err = _ingest(capsys, dsn, "--meta", "k" * 129 + "=v", str(path))
    assert rc == 2 and "--meta: invalid metadata key" in err and _stored(dsn) == []


def test_empty_embedder_is_refused(dsn: str, tmp_path: Path, capsys) -> None:
    path = tmp_path / "a.txt"
    path.write_text(V1, encoding="utf-8")
    rc, _, err = _ingest(capsys, dsn, "--embedder", "", str(path))
    assert rc == 2 and "empty embedder spec" in err and _stored(dsn) == []


def test_progress_in_a_log_is_plain_lines(dsn: str, tmp_path: Path) -> None:
    # Issue 13 item 4 ("for every long command"): stderr to a file, as `kubectl logs` or nohup see it. A bar's
    # carriage returns would pile up into one unreadable line there.
    import subprocess
    import sys

    (tmp_path / "contrat.md").write_text(V1, encoding="utf-8")
    log = tmp_path / "ingest.log"
    with log.open("w") as err:
        done = subprocess.run([sys.executable, "-m", "ragfr", "ingest", "--dsn", dsn, "--collection", "c",
                               "--chunk-size", "60", "--chunk-overlap", "0", str(tmp_path / "contrat.md")],
                              stdout=subprocess.PIPE, stderr=err, text=True, timeout=300,
                              env={**os.environ, "RAGFR_CACHE_DIR": str(tmp_path / "cache")})
    text = log.read_text()
    assert done.returncode == 0, text
    assert "\r" not in text, repr(text)
    lines = [line for line in text.splitlines() if line.startswith(f"embedding with {E5}:")]
    assert lines and "chunk(s) (100 %)" in lines[-1] and "ETA" in lines[-1], text
