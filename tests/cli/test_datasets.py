"""`ragfr datasets piaf` on the real shared PIAF file (skipped when it is absent), plus the BEIR reader."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from tests.support.paths import PIAF_JSON as PIAF

from ragfr.cli import main
from ragfr.errors import ConfigError
from ragfr.eval.beir import load_dataset

needs_piaf = pytest.mark.skipif(
    not PIAF.is_file(), reason=f"shared PIAF dataset absent ({PIAF}); see ../shared/datasets/piaf/README.md"
)


@needs_piaf
def test_piaf_converts_to_beir_with_stable_ids(tmp_path: Path) -> None:
    out1, out2 = tmp_path / "a", tmp_path / "b"
    assert main(["datasets", "piaf", str(PIAF), str(out1)]) == 0
    assert main(["datasets", "piaf", str(PIAF), str(out2)]) == 0
    assert (out1 / "corpus.jsonl").read_bytes() == (out2 / "corpus.jsonl").read_bytes()
    header = (out1 / "qrels" / "test.tsv").read_text().splitlines()[0]
    assert header == "query-id\tcorpus-id\tscore"
    ds = load_dataset(out1)
    # figures from the dataset's README: 1,518 paragraphs, 7,569 questions, one relevant paragraph each
    assert (len(ds.corpus), len(ds.queries)) == (1518, 7569)
    assert all(len(j) == 1 and set(j.values()) == {1} for j in ds.qrels.values())
    first = json.loads((out1 / "queries.jsonl").read_text().splitlines()[0])
    assert first["_id"] == "p140295443291664"
    assert first["text"] == "Combien de personnes travaillent au ministère des sports"
    doc = ds.corpus[next(iter(ds.qrels["p140295443291664"]))]
    assert "ministère" in doc.text.lower() and doc.title == "Sport"


@needs_piaf
def test_piaf_article_subset_is_seeded_and_self_contained(tmp_path: Path) -> None:
    assert main(["datasets", "piaf", str(PIAF), str(tmp_path / "s"), "--articles", "5", "--seed", "3"]) == 0
    assert main(["datasets", "piaf", str(PIAF), str(tmp_path / "t"), "--articles", "5", "--seed", "3"]) == 0
    ds = load_dataset(tmp_path / "s")
    assert len({d.title for d in ds.corpus.values()}) <= 5 < len(ds.corpus)
    assert all(did in ds.corpus for j in ds.qrels.values() for did in j)
    assert (tmp_path / "s" / "queries.jsonl").read_bytes() == (tmp_path / "t" / "queries.jsonl").read_bytes()


def test_wrong_checksum_is_a_one_line_error(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    fake = tmp_path / "piaf.json"
    fake.write_text('{"data": []}')
    assert main(["datasets", "piaf", str(fake), str(tmp_path / "o")]) == 2
    err = capsys.readouterr().err
    assert err.startswith("ragfr: error:") and "sha256" in err and err.count("\n") == 1


def test_beir_reader_rejects_qrels_to_unknown_documents(tmp_path: Path) -> None:
    (tmp_path / "qrels").mkdir()
    (tmp_path / "corpus.jsonl").write_text('{"_id": "d1", "title": "", "text": "x"}\n')
    (tmp_path / "queries.jsonl").write_text('{"_id": "q1", "text": "x"}\n')
    (tmp_path / "qrels" / "test.tsv").write_text("query-id\tcorpus-id\tscore\nq1\td2\t1\n")
    with pytest.raises(ConfigError, match="unknown corpus-id 'd2'"):
        load_dataset(tmp_path)
