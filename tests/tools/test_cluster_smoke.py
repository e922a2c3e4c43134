"""`make cluster-smoke`: the rendered default chart run with podman (ragfr_tools.kubesim.smoke), and the ways a
broken chart or image must fail it: each with a message that names the cause, never a timeout.

Needs `make images` (make test runs it before pytest). Real components only: our three images, podman, the
rendered objects. The stand-ins (the stock Open WebUI image's /app/backend layout, from the open-webui 0.12.4
wheel; the project's Ollama-API TEST DOUBLE for Ollama, which cannot run here) and what the smoke does not run
are listed in smoke.STAND_INS / smoke.NOT_RUN and docs/reference/testing.md.
Each test uses its own name prefix and checks that nothing with it is left in podman.
"""

from __future__ import annotations

import json
import re
import secrets
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest
from tests.support.paths import REPO
from tests.support.pki import server_pki

from ragfr_tools.kubesim import smoke, upgrade
from ragfr_tools.kubesim.runner import PODMAN, Cluster, SmokeFailure

pytestmark = pytest.mark.slow


def podman_names(prefix: str) -> dict[str, list[str]]:
    """Containers, pods and volumes named with the prefix (what `podman ps -a` / `volume ls` / `pod ls` list)."""
    lists = {
        "containers": ["ps", "-a", "--format", "{{.Names}}"],
        "pods": ["pod", "ls", "--format", "{{.Name}}"],
        "volumes": ["volume", "ls", "--format", "{{.Name}}"],
    }
    out = {}
    for what, args in lists.items():
        done = subprocess.run([*PODMAN, *args], capture_output=True, text=True, check=True)
        out[what] = sorted(n for n in done.stdout.split() if n.startswith(prefix))
    return out


@pytest.fixture()
def prefix(request: pytest.FixtureRequest) -> Iterator[str]:
    # Random, not the pid: two CI runs in separate PID namespaces may share one podman store (stop 18's CI failed
    # on a volume a killed run had left under a fixed name).
    name = f"ragfr-smoke-t{secrets.token_hex(3)}-{request.node.name[5:25].replace('_', '-')}"
    assert podman_names(name) == {"containers": [], "pods": [], "volumes": []}
    yield name
    assert podman_names(name) == {"containers": [], "pods": [], "volumes": []}, "the smoke left objects behind"


def run(prefix: str, tmp_path: Path, **kwargs: object) -> tuple[list[str], list[smoke.Stage]]:
    lines: list[str] = []
    stages = smoke.run(prefix=prefix, workdir=tmp_path / "cluster", log=lines.append, **kwargs)
    return lines, stages


def run_make_cluster_smoke(prefix: str) -> tuple[list[str], list[str]]:
    """`make cluster-smoke` itself (its command line, with this test's prefix): the lines it logged, then its stages'
    names from the summary it prints. scripts/test.sh no longer runs it apart: this test is that run, checked."""
    done = subprocess.run([sys.executable, "-m", "ragfr_tools.kubesim.smoke", "--example", "default", "--prefix", prefix],
                          capture_output=True, text=True, timeout=1800, check=False)
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
    out = done.stdout.splitlines()
    summary = [i for i, line in enumerate(out) if re.match(r"cluster-smoke: +[0-9.]+ s  ", line)]
    assert summary and out[-1].startswith("cluster-smoke: OK in "), done.stdout[-3000:]
    # What run() logged, one entry per log call as run(log=...) would collect them: its own "cluster-smoke: " lines,
    # and between them the blocks it logs whole (container logs, the models gate, the analyst, helm test).
    lines: list[str] = []
    for line in out[:summary[0]]:
        if line.startswith("cluster-smoke: ") or not lines or lines[-1].startswith("cluster-smoke: "):
            lines.append(line)
        else:
            lines[-1] += "\n" + line
    return lines, [re.sub(r"^cluster-smoke: +[0-9.]+ s  ", "", out[i]) for i in summary]


def test_default_chart_comes_up_in_kubernetes_order(prefix: str) -> None:
    lines, stages = run_make_cluster_smoke(prefix)
    # The Job's name ends with a hash of its spec (charts/ragfr/templates/_jobs.tpl).
    assert [re.sub(r"-migrate-[0-9a-f]{10}$", "-migrate-<hash>", s) for s in stages[1:]] == [
        "StatefulSet/ragfr-ragdb", "Job/ragfr-migrate-<hash>", "CronJob/ragfr-collection-graphs",
        "Deployment/ragfr-ollama",
        "Deployment/ragfr-openwebui (init containers wait-for-schema, wait-for-grants, db-passfile, copy-stock-openwebui, "
        "apply-french-patch)",
        "Deployment/ragfr-openwebui container open-webui (readiness patch check)",
        "Deployment/ragfr-openwebui (containers open-webui, started, not ready)",
        "Deployment/ragfr-openwebui (ready)",
        f"models gate ({smoke.DOUBLE_EMBEDDING_MODEL} missing, then copied in)",
        "Open WebUI API: sign-up, knowledge base, upload, 2 questions",
        "Pod/ragfr-test",
    ]
    # Issue 36: with the embedding model in the model volume under another tag only (what a bare `ollama pull`
    # stores), Open WebUI's readiness probe and helm test's models check both name it; Ready once it is copied in.
    embedding, chat = smoke.DOUBLE_EMBEDDING_MODEL, smoke.CHAT_MODEL
    assert (f"cluster-smoke: the release names {embedding}, {chat}; the model volume gets "
            f"multilingual-e5-small-test-double:latest, {chat}") in lines
    gate = lines[lines.index(f"cluster-smoke: models gate: {embedding} missing") + 1]
    assert (f"PASS not Ready without {embedding}: ollama-models: Ollama at http://ragfr-ollama:11434 lacks {embedding} "
            f"(it holds: multilingual-e5-small-test-double:latest, {chat})") in gate, gate
    assert f"PASS helm test without it: FAIL models: AssertionError: Ollama at http://ragfr-ollama:11434 lacks " \
           f"{embedding}" in gate, gate
    assert f"PASS Ready once {embedding} is in the model volume" in gate, gate
    # Inside the Open WebUI container's filesystem (patched files mounted over the stock ones by subPath,
    # ragfr on PYTHONPATH from the ConfigMap), the patch is active.
    patch_check = lines[lines.index("cluster-smoke: Open WebUI container: the patch check of its readiness probe") + 1]
    manifest = json.loads((REPO / "patches" / "open-webui" / "manifest.json").read_text(encoding="utf-8"))
    active = (f"active: ragfr-owui-patch {manifest['patch_version']} for open-webui "
              f"{manifest['open_webui_version']} in /app/backend")
    assert active in patch_check, patch_check
    assert patch_check.count("    patched ") == len(manifest["files"]), patch_check  # every file of the manifest
    # The running Open WebUI answered the inflected question from the theft article, with ragfr's ranks, and
    # refused the off-domain one without a model call (smoke.analyst raises on anything else).
    analyst = lines[lines.index("cluster-smoke: through Open WebUI's HTTP API: sign up, knowledge base, two French "
                                "questions") + 1]
    assert "PASS 'Dans quel délai dois-je déclarer un vol ?': rank " in analyst and "Article 3 - Vol." in analyst
    assert "PASS 'Quelle est la capitale du Pérou ?': refused" in analyst and "0 model calls" in analyst
    helm_test = lines[-1]
    for check in ("health", "models", "patch", "schema", "french"):
        assert f"PASS {check}:" in helm_test, helm_test
    assert "vector(384)" in helm_test and "'ecole publique' -> lexemes ['ecol', 'publiqu']" in helm_test
    assert "FAIL" not in helm_test


def test_wrong_ragfr_image_tag_names_the_image(prefix: str, tmp_path: Path) -> None:
    with pytest.raises(SmokeFailure) as failure:
        run(prefix, tmp_path, overrides={"migrations": {"image": {"tag": "0.0.0-missing"}}})
    assert str(failure.value).startswith(
        "image localhost/ragfr/ragfr:0.0.0-missing (rendered as localhost/ragfr/ragfr:0.0.0-missing) is not in local "
        "storage")


def test_failing_migrations_job_fails_with_its_own_log(prefix: str, tmp_path: Path) -> None:
    def wrong_database(docs: list[dict]) -> None:  # the Job's DSN names a database that does not exist
        for d in docs:
            if d["kind"] == "Job" and d["metadata"]["name"].startswith("ragfr-migrate-"):
                for e in d["spec"]["template"]["spec"]["containers"][0]["env"]:
                    if e["name"] == "DATABASE_URL":
                        e["value"] = e["value"].replace(":5432/ragfr?", ":5432/nope?")

    with pytest.raises(SmokeFailure) as failure:
        run(prefix, tmp_path, mutate=wrong_database)
    message = str(failure.value)
    expected = r"Job/ragfr-migrate-[0-9a-f]{10}: container migrate failed \(exit 2\); last lines:"
    assert re.match(expected, message), message
    assert 'database "nope" does not exist' in message


def test_refused_french_patch_fails_the_init_container_with_its_reason(prefix: str, tmp_path: Path) -> None:
    with pytest.raises(SmokeFailure) as failure:
        run(prefix, tmp_path, modify_stock_file="open_webui/retrieval/utils.py")
    message = str(failure.value)
    assert message.startswith("Deployment/ragfr-openwebui: init container apply-french-patch failed (exit 1)")
    assert "open_webui/retrieval/utils.py: not the pristine file of open-webui 0.12.4" in message
    assert "apply-patch: the patcher refused (exit 2)" in message


def test_missing_pythonpath_in_the_configmap_fails_the_patch_check(prefix: str, tmp_path: Path) -> None:
    def drop_pythonpath(docs: list[dict]) -> None:  # the ConfigMap loses the variable that puts ragfr on the path
        for d in docs:
            if d["kind"] == "ConfigMap" and d["metadata"]["name"] == "ragfr-openwebui-env":
                del d["data"]["PYTHONPATH"]

    with pytest.raises(SmokeFailure) as failure:
        run(prefix, tmp_path, mutate=drop_pythonpath)
    message = str(failure.value)
    assert message.startswith(
        "Deployment/ragfr-openwebui: container open-webui (readiness patch check) failed (exit 1); last lines:")
    assert "No module named 'ragfr'" in message


def test_query_rewriting_turned_back_on_fails_the_analyst_session(prefix: str, tmp_path: Path) -> None:
    # Issue 12's regression, in the chart's own pods: with ENABLE_RETRIEVAL_QUERY_GENERATION on, Open WebUI first
    # asks the chat model to rewrite the question, so every question costs a model call before the evidence gate
    # (and the search runs on whatever the model wrote). The smoke names it either way: the answerable question's
    # second call, or, when the rewritten question is refused (the fitted gate reads the double's rewrite as
    # ungrounded), the call made below the gate.
    def rewrite_queries(docs: list[dict]) -> None:
        for d in docs:
            if d["kind"] == "ConfigMap" and d["metadata"]["name"] == "ragfr-openwebui-env":
                d["data"]["ENABLE_RETRIEVAL_QUERY_GENERATION"] = "true"

    with pytest.raises(SmokeFailure) as failure:
        run(prefix, tmp_path, mutate=rewrite_queries, models_gate_first=False)
    message = str(failure.value)
    assert message.startswith("Open WebUI API: "), message
    assert ("chat model calls for the answerable question (expected 1)" in message
            or "chat model calls below the evidence gate (expected 0)" in message), message


def test_images_built_from_other_sources_are_refused_before_anything_runs(tmp_path: Path) -> None:
    # The smoke runs the image IDs `make images` recorded; images older than the checkout would run old code
    # against the new chart and fail far from the cause, so their recorded inputs hash must match.
    now = subprocess.run(["bash", str(REPO / "scripts" / "images.sh"), "inputs"], capture_output=True, text=True,
                         check=True).stdout.strip()
    assert len(now) == 16, now
    listed = tmp_path / "images.built"
    listed.write_text(f"# inputs {now}\nlocalhost/ragfr/ragfr:0.1.0 sha256abc\n")
    # The chart renders the imported images as localhost/ragfr/<name>:<version> (global.imageSource=imported).
    assert smoke.built_images(listed) == {"localhost/ragfr/ragfr:0.1.0": "sha256abc"}
    for stale in (f"# inputs {'0' * 16}\n", ""):
        listed.write_text(stale + "localhost/ragfr/ragfr:0.1.0 sha256abc\n")
        with pytest.raises(SmokeFailure, match=r"run `make images` first"):
            smoke.built_images(listed)


TLS_SECRET = "ragdb-tls"
TLS_VALUES = {"database": {"tls": {"enabled": True, "existingSecret": TLS_SECRET}}}

# Run in the migrations Job's pod, in its `migrate` container (its rendered env: DATABASE_URL with
# sslmode=verify-full and the mounted CA, PGPASSWORD): the connection the chart gives, then the ones an
# attacker or a misconfiguration would make. argv[1]: a CA the release does not trust.
TLS_PROBE = r"""
import os, socket, sys, psycopg
url = os.environ["DATABASE_URL"]
with psycopg.connect(url) as conn:
    ssl, version = conn.execute("SELECT ssl, version FROM pg_stat_ssl WHERE pid = pg_backend_pid()").fetchone()
    print(f"chart: ssl={ssl} {version} sslmode={conn.info.get_parameters().get('sslmode')}")
    host = conn.info.host
open("/tmp/other-ca.crt", "w").write(sys.argv[1])
for label, kwargs in (("plain", {"sslmode": "disable"}), ("other CA", {"sslrootcert": "/tmp/other-ca.crt"}),
                      ("by IP", {"host": socket.gethostbyname(host)})):
    try:
        psycopg.connect(url, **kwargs).close()
        print(f"{label}: ACCEPTED")
    except psycopg.OperationalError as err:
        print(f"{label}: refused: {' '.join(str(err).split())}")
"""


def test_database_tls_clients_verify_the_server_and_plain_tcp_is_refused(prefix: str, tmp_path: Path) -> None:
    """database.tls with the operator's Secret: ragdb serves the certificate, the migrations Job's init
    containers (psql as the superuser and the owner) and `ragfr migrate` connect with verify-full, and from
    another pod a plain connection, an untrusted CA and a name the certificate does not carry are refused."""
    pki = server_pki(tmp_path / "pki", "ragfr-ragdb")
    other = server_pki(tmp_path / "other", "ragfr-ragdb")
    docs = smoke.render("default", {**smoke.SMOKE_VALUES, **TLS_VALUES})  # disjoint keys
    docs.append(pki.secret(TLS_SECRET))
    cluster = Cluster(docs, prefix=prefix, workdir=tmp_path / "cluster", image_map=smoke.built_images())
    try:
        cluster.start(cluster.workload("StatefulSet", "ragfr-ragdb"))
        (name,) = [d["metadata"]["name"] for d in docs
                   if d["kind"] == "Job" and d["metadata"]["name"].startswith("ragfr-migrate-")]
        migrate = cluster.workload("Job", name)
        cluster.start(migrate, run_to_completion=True)
        cluster.check_in_pod(migrate, "migrate", ["python", "-c", TLS_PROBE, other.ca_crt], what="TLS probe")
        report = cluster.last_logs
    finally:
        cluster.teardown()
    assert "chart: ssl=True TLSv1.3 sslmode=verify-full" in report, report
    assert "plain: refused:" in report and "no encryption" in report, report
    assert "other CA: refused:" in report and "certificate verify failed" in report, report
    assert "by IP: refused:" in report and 'server certificate for "ragfr-ragdb"' in report, report
    assert "does not match host name" in report, report


def test_database_tls_default_chart_answers_in_french(prefix: str, tmp_path: Path) -> None:
    """The whole smoke (Open WebUI's SQLAlchemy engines, ragfr's pool in Open WebUI, helm test) with ragdb
    refusing any connection without TLS from another pod: each client got there with verify-full."""
    pki = server_pki(tmp_path / "pki", "ragfr-ragdb")
    lines, _ = run(prefix, tmp_path, overrides=TLS_VALUES, mutate=lambda docs: docs.append(pki.secret(TLS_SECRET)),
                   models_gate_first=False)
    analyst = lines[lines.index("cluster-smoke: through Open WebUI's HTTP API: sign up, knowledge base, two French "
                                "questions") + 1]
    assert "PASS 'Dans quel délai dois-je déclarer un vol ?': rank " in analyst, analyst
    assert "FAIL" not in lines[-1] and "PASS schema:" in lines[-1], lines[-1]


def test_the_previous_release_is_the_tree_before_the_newest_migration(tmp_path: Path) -> None:
    commit, lacking = upgrade.previous_release()
    tree = upgrade.export(commit, tmp_path / "previous")
    here = {p.name for p in (REPO / "migrations").glob("*.sql")}
    there = {p.name for p in (tree / "migrations").glob("*.sql")}
    assert lacking and {f"{name}.sql" for name in lacking.split(", ")} <= here - there, (lacking, here - there)
    values = json.loads(json.dumps(smoke.SMOKE_VALUES))
    old = smoke._component(smoke.render("default", values, chart=tree / "charts" / "ragfr"), "Job", "migrate")
    new = smoke._component(smoke.render("default", values), "Job", "migrate")
    assert old != new  # the upgrade runs a Job of its own


def test_an_upgrade_across_a_migration_keeps_the_knowledge_base(prefix: str, tmp_path: Path) -> None:
    # Issue 48 item 3: the previous release (one migration less) installed with its own images, a knowledge base
    # written, then upgraded to this checkout: upgrade.run raises on any difference (migrations, knowledge base,
    # passages) and logs its PASS lines.
    lines: list[str] = []
    stages = upgrade.run(prefix=prefix, workdir=tmp_path / "upgrade", log=lines.append)
    _, lacking = upgrade.previous_release()
    applied = next(line for line in lines if "PASS migrations applied by the upgrade" in line)
    assert all(f"{int(name.split('_', 1)[0])} {name.split('_', 1)[1]}" in applied for name in lacking.split(", ")), applied
    assert any("kept; the same passages" in line for line in lines), lines
    names = [s.name for s in stages]
    assert names.count("Deployment/ragfr-openwebui") == 2, names  # installed, then replaced by the upgrade
    assert [n for n in names if n.startswith("Job/ragfr-migrate-")][0] != [
        n for n in names if n.startswith("Job/ragfr-migrate-")][-1], names
