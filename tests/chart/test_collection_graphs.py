"""The CronJob that gives each large knowledge base its own HNSW graph (issue 39): Open WebUI's role cannot
build indexes and knowledge bases grow between upgrades, so `ragfr filter-index sync` runs on a schedule
as the owner. What the sync does is tested on the real database (tests/retrieval/test_collection_isolation.py,
tests/retrieval/test_filter_index.py); here, that the release runs it with what it needs."""

from __future__ import annotations

from typing import Any

import pytest
from tests.chart.test_networkpolicy import INTERNET, allowed, cnpg_labels, pod_labels
from tests.support.chart import EXAMPLES, env_of, example_values, one, render


def _pod(docs: list[dict[str, Any]]) -> dict[str, Any]:
    cron = one(docs, "CronJob", "-collection-graphs")
    template: dict[str, Any] = cron["spec"]["jobTemplate"]["spec"]["template"]
    return template


@pytest.mark.parametrize("example", ["default", "cnpg", "external-db", "database-tls"])
def test_the_sync_runs_as_the_migrations_job_does(example: str) -> None:
    docs = render(example_values(example) if example != "default" else {})
    pod = _pod(docs)
    (sync,) = pod["spec"]["containers"]
    job = one(docs, "Job", "-migrate-*")["spec"]["template"]["spec"]
    (migrate,) = job["containers"]
    assert sync["command"] == ["ragfr", "filter-index", "sync"]
    # The owner's URL and password, the migrations image, and the database CA when TLS is on: no argv secret.
    assert env_of(sync)["DATABASE_URL"] == env_of(migrate)["DATABASE_URL"]
    assert {e["name"]: e for e in sync["env"]}["PGPASSWORD"] == {e["name"]: e for e in migrate["env"]}["PGPASSWORD"]
    assert (sync["image"], sync["imagePullPolicy"]) == (migrate["image"], migrate["imagePullPolicy"])
    assert [m for m in sync["volumeMounts"] if m["name"] != "tmp"] == [
        m for m in migrate["volumeMounts"] if m["name"] != "tmp"]


@pytest.mark.parametrize("example", sorted(EXAMPLES))
def test_the_network_policies_let_it_reach_the_database_as_the_migrations_job(example: str) -> None:
    docs = render(example_values(example))
    mode = example_values(example).get("database", {}).get("mode", "internal")
    db = (pod_labels(docs, "StatefulSet", "-ragdb") if mode == "internal" else cnpg_labels(docs) if mode == "cnpg"
          else INTERNET)
    assert allowed(docs, pod_labels(docs, "Job", "-migrate-*"), db, 5432)  # the reference client
    assert allowed(docs, _pod(docs)["metadata"]["labels"], db, 5432)


def test_off_renders_no_cronjob_and_the_schedule_is_the_operators() -> None:
    off = render({"migrations": {"collectionGraphs": {"enabled": False}}})
    assert not [d for d in off if d["kind"] == "CronJob" and d["metadata"]["name"].endswith("-collection-graphs")]
    hourly = render({"migrations": {"collectionGraphs": {"schedule": "@hourly"}}})
    assert one(hourly, "CronJob", "-collection-graphs")["spec"]["schedule"] == "@hourly"
