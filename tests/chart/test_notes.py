"""What runs on a schedule is named in NOTES (issue 48: the collection-graphs CronJob was in no table nor NOTES): every
CronJob a release renders, with its schedule, for the examples that render them."""

from __future__ import annotations

from typing import Any

import pytest
import yaml
from tests.support.chart import EXAMPLES, example_values, render_raw


def notes_and_cronjobs(values: dict[str, Any]) -> tuple[str, list[tuple[str, str]]]:
    rendered = render_raw(values)
    notes = next(t for p, t in rendered.items() if p.endswith("NOTES.txt"))
    crons = [(d["metadata"]["name"], d["spec"]["schedule"]) for p, t in rendered.items() if not p.endswith("NOTES.txt")
             for d in yaml.safe_load_all(t) if d and d.get("kind") == "CronJob"]
    return notes, crons


@pytest.mark.parametrize("example", EXAMPLES)
def test_every_cronjob_is_named_in_notes_with_its_schedule(example: str) -> None:
    notes, crons = notes_and_cronjobs(example_values(example))
    for name, schedule in crons:
        assert f"CronJob {name} ({schedule}" in notes, (name, notes)


def test_the_collection_graphs_cronjob_is_there_by_default_and_gone_when_off() -> None:
    notes, crons = notes_and_cronjobs({})
    assert ("ragfr-collection-graphs", "*/30 * * * *") in crons
    assert "ragfr filter-index sync" in notes
    notes, crons = notes_and_cronjobs({"migrations": {"collectionGraphs": {"enabled": False}}})
    assert not crons and "collection-graphs" not in notes
