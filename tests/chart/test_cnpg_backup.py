"""database.mode=cnpg: the operator's continuous backup through the Barman Cloud Plugin (examples/cnpg-backup.yaml).

Rendered objects only (no CloudNativePG operator runs here): their wiring (the Cluster names the ObjectStore it
archives WAL to, the ScheduledBackup the Cluster and the plugin), the credentials' keys, the instances' egress to
the object store and nowhere else, and the errors an operator gets for an incomplete configuration."""

from __future__ import annotations

import copy

import pytest
from tests.chart.test_networkpolicy import INTERNET, allowed, cnpg_labels
from tests.support.chart import Doc, error_line, example_values, one, render

PLUGIN = "barman-cloud.cloudnative-pg.io"


@pytest.fixture(scope="module")
def docs() -> list[Doc]:
    return render(example_values("cnpg-backup"))


def test_the_cluster_archives_wal_to_the_rendered_object_store(docs: list[Doc]) -> None:
    cluster = one(docs, "Cluster", "-db")
    store = one(docs, "ObjectStore", "-db-backup")
    [plugin] = cluster["spec"]["plugins"]
    assert plugin == {"name": PLUGIN, "isWALArchiver": True,
                      "parameters": {"barmanObjectName": store["metadata"]["name"]}}
    config = store["spec"]["configuration"]
    assert config["destinationPath"] == "s3://ragfr-wal/prod"
    assert config["endpointURL"] == "https://minio.backup.svc:9000"
    creds = config["s3Credentials"]
    # The same Secret keys as the pg_dump CronJob's S3 upload (backup.s3.existingSecret).
    assert creds == {"accessKeyId": {"name": "ragfr-backup-s3", "key": "access-key-id"},
                     "secretAccessKey": {"name": "ragfr-backup-s3", "key": "secret-access-key"}}
    assert store["spec"]["retentionPolicy"] == "30d"


def test_the_scheduled_backup_runs_the_plugin_for_this_cluster(docs: list[Doc]) -> None:
    scheduled = one(docs, "ScheduledBackup", "-db")["spec"]
    assert scheduled["cluster"] == {"name": one(docs, "Cluster", "-db")["metadata"]["name"]}
    assert scheduled["method"] == "plugin" and scheduled["pluginConfiguration"] == {"name": PLUGIN}
    assert len(scheduled["schedule"].split()) == 6, "CloudNativePG's cron has a seconds field"
    assert scheduled["immediate"] is True, "until a first base backup exists, the WAL archive restores nothing"


def test_instances_reach_the_object_store_port_only(docs: list[Doc]) -> None:
    db = cnpg_labels(docs)
    store = {"_ns": "backup"}
    assert allowed(docs, db, store, 9000)
    assert not allowed(docs, db, store, 22) and not allowed(docs, db, INTERNET, 9000)
    plain = render(example_values("cnpg"))
    assert not allowed(plain, cnpg_labels(plain), store, 9000), "no backup, no egress to the object store"
    assert not [d for d in plain if d["kind"] in ("ObjectStore", "ScheduledBackup")]
    assert "plugins" not in one(plain, "Cluster", "-db")["spec"]


@pytest.mark.parametrize(("change", "expected"), [
    ({"destinationPath": ""}, "database.cnpg.backup.enabled needs database.cnpg.backup.destinationPath"),
    ({"existingSecret": ""}, "database.cnpg.backup.enabled needs database.cnpg.backup.destinationPath"),
    ({"schedule": "0 3 * * *"}, "at '/database/cnpg/backup/schedule'"),
    ({"destinationPath": "ragfr-wal/prod"}, "at '/database/cnpg/backup/destinationPath'"),
    ({"retentionPolicy": "30 days"}, "at '/database/cnpg/backup/retentionPolicy'"),
])
def test_incomplete_configurations_are_refused_with_the_value_to_fix(change: dict[str, str], expected: str) -> None:
    values = copy.deepcopy(example_values("cnpg-backup"))
    values["database"]["cnpg"]["backup"].update(change)
    message = error_line(values)
    assert expected in message, message


def test_the_operator_backup_outside_cnpg_mode_is_refused() -> None:
    message = error_line({"database": {"cnpg": {"backup": {"enabled": True, "destinationPath": "s3://b/p",
                                                            "existingSecret": "s"}}}})
    assert "database.cnpg.backup.enabled is the CloudNativePG operator's backup: it needs database.mode=cnpg" in message


def _recovering(**backup: str) -> dict:
    values = copy.deepcopy(example_values("cnpg-backup"))
    values["database"]["cnpg"]["recovery"] = {"enabled": True, "objectStore": "ragfr-db-backup",
                                              "serverName": "ragfr-db", "targetTime": "2026-12-01T08:00:00Z"}
    values["database"]["cnpg"]["backup"].update(backup)
    return values


def test_a_recovered_cluster_starts_from_the_archive_and_archives_under_a_new_name() -> None:
    docs = render(_recovering(serverName="ragfr-db-2"))
    spec = one(docs, "Cluster", "-db")["spec"]
    assert "initdb" not in spec["bootstrap"]
    recovery = spec["bootstrap"]["recovery"]
    assert recovery["source"] == "backup-origin" and recovery["database"] == "ragfr" and recovery["owner"] == "ragfr"
    assert recovery["recoveryTarget"] == {"targetTime": "2026-12-01T08:00:00Z"}
    [origin] = spec["externalClusters"]
    assert origin == {"name": "backup-origin", "plugin": {"name": PLUGIN, "parameters": {
        "barmanObjectName": "ragfr-db-backup", "serverName": "ragfr-db"}}}
    assert spec["plugins"][0]["parameters"]["serverName"] == "ragfr-db-2"


def test_recovering_into_the_folder_being_read_is_refused() -> None:
    message = error_line(_recovering())
    assert "set database.cnpg.backup.serverName to a new name (e.g. ragfr-db-2)" in message, message
    message = error_line({"database": {"mode": "cnpg", "openwebui": {"user": "ragfr"},
                                       "cnpg": {"recovery": {"enabled": True}}}})
    assert "database.cnpg.recovery.enabled needs database.mode=cnpg, database.cnpg.recovery.objectStore" in message


def test_recovering_without_an_archive_of_its_own_is_refused() -> None:
    values = _recovering(serverName="ragfr-db-2")
    values["database"]["cnpg"]["backup"]["enabled"] = False
    message = error_line(values)
    assert message.startswith("database.cnpg.recovery.enabled needs database.cnpg.backup.enabled=true"), message
