"""The PIAF split (deterministic, disjoint by article) and the hyper-parameters' identity."""

from __future__ import annotations

import dataclasses
import random
from pathlib import Path

import pytest

from ragfr.eval.beir import Dataset, Document, Query
from ragfr_tools.reranker import data, hyper

PIAF = Path(__file__).resolve().parents[3] / ".." / "shared" / "datasets" / "piaf" / "piaf-v1.1.json"


def test_the_split_depends_on_the_title_alone_and_is_disjoint() -> None:
    titles = [f"Article {i}" for i in range(2000)]
    train, test = data.split_titles(titles)
    shuffled = titles[:]
    random.Random(1).shuffle(shuffled)
    assert data.split_titles(shuffled + titles[:10]) == (train, test)  # order and duplicates do not matter
    assert not set(train) & set(test) and set(train) | set(test) == set(titles)
    assert 0.17 < len(test) / len(titles) < 0.23  # test_buckets=2 of 10
    assert data.split_titles(titles, test_buckets=0) == (sorted(titles), [])


def test_subsets_keep_whole_articles_and_only_their_questions() -> None:
    corpus = {f"d{i}": Document(f"d{i}", title, f"texte {i}") for i, title in enumerate(["A", "A", "B", "C"])}
    queries = {f"q{i}": Query(f"q{i}", f"question {i}") for i in range(4)}
    ds = Dataset("t", corpus, queries, {f"q{i}": {f"d{i}": 1} for i in range(4)})
    a = data.subset(ds, {"A"}, "a")
    rest = data.subset(ds, {"B", "C"}, "rest")
    assert set(a.corpus) == {"d0", "d1"} and set(a.queries) == {"q0", "q1"}
    assert set(rest.queries) == {"q2", "q3"} and not set(a.corpus) & set(rest.corpus)
    assert data.split_hash(a, rest) != data.split_hash(rest, a)


@pytest.mark.skipif(not PIAF.exists(), reason="PIAF not in ../shared/datasets/piaf")
def test_the_piaf_split_is_the_recorded_one() -> None:
    """Pinned counts: a change of the split rule (or of the converter) shows here, not in the scores."""
    _, train, test = data.split_dataset(data.load_piaf(PIAF))
    assert not {d.title for d in train.corpus.values()} & {d.title for d in test.corpus.values()}
    assert (len({d.title for d in train.corpus.values()}), len({d.title for d in test.corpus.values()})) == (376, 104)
    assert (len(train.corpus), len(test.corpus), len(test.queries)) == (1158, 360, 1796)
    assert len(train.queries) + len(test.queries) == 7569


def test_the_hyper_parameters_round_trip_into_the_hash() -> None:
    h = hyper.HYPER
    assert hyper.hyper_hash(hyper.Hyper(**hyper.hyper_dict(h))) == hyper.hyper_hash(h)
    for f in dataclasses.fields(h):
        value = getattr(h, f.name)
        changed = (not value) if isinstance(value, bool) else value + 1 if isinstance(value, int | float) else value + "x"
        other = dataclasses.replace(h, **{f.name: changed})
        assert hyper.hyper_hash(other) != hyper.hyper_hash(h), f.name
    # the mined negatives do not depend on the optimizer: a new lr reuses them, a new seed does not
    assert hyper.mining_hash(dataclasses.replace(h, lr=h.lr * 2)) == hyper.mining_hash(h)
    assert hyper.mining_hash(dataclasses.replace(h, seed=h.seed + 1)) != hyper.mining_hash(h)


def test_other_library_versions_are_refused_unless_overridden(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(hyper.PINNED, "numpy", "0.0.1")
    monkeypatch.delenv(hyper.OVERRIDE_ENV, raising=False)
    with pytest.raises(SystemExit, match="numpy"):
        hyper.check_versions()
    monkeypatch.setenv(hyper.OVERRIDE_ENV, "1")
    with pytest.warns(UserWarning, match="numpy"):
        record = hyper.check_versions()
    assert record["mismatches"]["numpy"][0] == "0.0.1"


def test_presets_are_distinct_runs_and_an_unknown_one_is_refused(monkeypatch: pytest.MonkeyPatch) -> None:
    hashes = {hyper.hyper_hash(h) for h in hyper.PRESETS.values()}
    assert len(hashes) == len(hyper.PRESETS)
    assert hyper.hyper_hash(hyper.PRESETS["e5s6-500q"]) == "553aa8a43dcc"  # the first measured run
    monkeypatch.setenv(hyper.PRESET_ENV, "no-such-run")
    with pytest.raises(SystemExit, match="no-such-run"):
        hyper.preset()
    monkeypatch.delenv(hyper.PRESET_ENV)
    assert hyper.preset() == hyper.PRESETS[hyper.DEFAULT_PRESET]
