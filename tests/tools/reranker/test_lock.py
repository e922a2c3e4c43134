"""The committed lock of the mined pairs (issue 29 item 1): on any machine, `make reranker` trains on the very
pairs the recorded model was trained on, rebuilt byte for byte from PIAF and the lock, without mining (a
fresh HNSW graph's random levels change some top-10s), and refuses a lock that does not rebuild them."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from tests.support.paths import PIAF_JSON

from ragfr.eval.piaf import sha256_file
from ragfr_tools.reranker import lock
from ragfr_tools.reranker.data import read_mined
from ragfr_tools.reranker.hyper import mining_hash

pytestmark = pytest.mark.skipif(not PIAF_JSON.exists(), reason="PIAF not in ../shared/datasets/piaf")


def test_the_committed_lock_rebuilds_the_pairs_of_the_default_preset(tmp_path: Path) -> None:
    path = lock.lock_path()
    assert path.is_file(), f"no lock for the default preset's mining hash {mining_hash()}"
    recorded = json.loads(path.read_text())
    out = tmp_path / "mined.jsonl"
    lock.rebuild(PIAF_JSON, path, out)
    assert sha256_file(out) == recorded["mined_sha256"]
    rows = read_mined(out)
    assert len(rows) == len(recorded["rows"]) == 1000
    assert all(len(r["negatives"]) == 3 and r["positive"] not in r["negatives"] for r in rows)
    # Writing the lock again from what it rebuilt gives the same lock: ids and positions, no text.
    again = tmp_path / "again.json"
    lock.write(PIAF_JSON, out, again)
    assert again.read_text() == path.read_text()
    assert "Noël" not in path.read_text()  # PIAF's text stays in ../shared (the first question's article)


def test_a_lock_that_does_not_rebuild_its_pairs_is_refused(tmp_path: Path) -> None:
    recorded = json.loads(lock.lock_path().read_text())
    out = tmp_path / "mined.jsonl"

    other = {**recorded, "mining_hash": "000000000000"}
    (tmp_path / "other.json").write_text(json.dumps(other))
    with pytest.raises(lock.LockError, match="mining_hash: lock 000000000000"):
        lock.rebuild(PIAF_JSON, tmp_path / "other.json", out)

    moved = json.loads(json.dumps(recorded))
    moved["rows"][0][2][0] = moved["rows"][0][2][1]  # another chunk as the first negative
    (tmp_path / "moved.json").write_text(json.dumps(moved))
    with pytest.raises(lock.LockError, match="sha256 is not"):
        lock.rebuild(PIAF_JSON, tmp_path / "moved.json", out)
    assert not out.exists() and not list(tmp_path.glob("*.partial"))


def test_pairs_whose_texts_are_not_train_chunks_cannot_be_locked(tmp_path: Path) -> None:
    good = tmp_path / "mined.jsonl"
    lock.rebuild(PIAF_JSON, lock.lock_path(), good)
    rows = read_mined(good)
    rows[5]["negatives"][1] = "Un passage qui n'est dans aucun article du corpus d'entraînement."
    bad = tmp_path / "bad.jsonl"
    bad.write_text("".join(json.dumps(r, ensure_ascii=False) + "\n" for r in rows), encoding="utf-8")
    with pytest.raises(lock.LockError, match=f"question {rows[5]['qid']}"):
        lock.write(PIAF_JSON, bad, tmp_path / "lock.json")
    assert not (tmp_path / "lock.json").exists()


def test_a_fresh_mining_is_compared_question_by_question(tmp_path: Path) -> None:
    locked = tmp_path / "locked.jsonl"
    lock.rebuild(PIAF_JSON, lock.lock_path(), locked)
    rows = read_mined(locked)
    rows[0]["hybrid_top"] = rows[0]["hybrid_top"][::-1]
    rows[1]["negatives"] = rows[1]["negatives"][::-1]
    fresh = tmp_path / "fresh.jsonl"
    fresh.write_text("".join(json.dumps(r, ensure_ascii=False) + "\n" for r in rows), encoding="utf-8")
    diff = lock.differences(locked, fresh)
    assert diff["same_questions"] and diff["top_k_differs"] == [rows[0]["qid"]]
    assert diff["negatives_differ"] == [rows[1]["qid"]]
