"""`helm --wait` waits for every PersistentVolumeClaim of the release to be Bound (Helm 3's ready checker, Helm 4's
kstatus watcher), and k3s's local-path binds a claim only when a pod first uses it (WaitForFirstConsumer). A claim
that only a CronJob's pod uses stays Pending until that CronJob runs, so an upgrade with --wait would time out on
it (newcomer walk 0.2.0, item 24). The chart has exactly one such claim, the backup volume: install.md's step 13
upgrades without --wait and starts the first backup at once, and the chart's notes say why."""

from __future__ import annotations

import re
import shlex
from typing import Any

import pytest
from tests.docs.test_install_walk import fenced, shell_lines
from tests.support.chart import EXAMPLES, example_values, render, render_raw
from tests.support.paths import REPO

STEP13 = "## 13. Backups, before the first real documents"


def claims_and_users(values: dict[str, Any]) -> tuple[set[str], dict[str, set[str]]]:
    """The claims the chart creates (StatefulSets' templates included), and claim -> kinds whose pods mount it."""
    docs = render(values)
    made = {d["metadata"]["name"] for d in docs if d["kind"] == "PersistentVolumeClaim"}
    users: dict[str, set[str]] = {}
    for d in docs:
        spec = d.get("spec", {})
        if d["kind"] == "CronJob":
            pod = spec["jobTemplate"]["spec"]["template"]["spec"]
        elif d["kind"] in ("Deployment", "StatefulSet", "Job", "DaemonSet"):
            pod = spec["template"]["spec"]
            for t in spec.get("volumeClaimTemplates", []):  # the StatefulSet's own pods use these
                made.add(f"{t['metadata']['name']}-{d['metadata']['name']}-0")
                users.setdefault(f"{t['metadata']['name']}-{d['metadata']['name']}-0", set()).add(d["kind"])
        else:
            continue
        for v in pod.get("volumes", []):
            if "persistentVolumeClaim" in v:
                users.setdefault(v["persistentVolumeClaim"]["claimName"], set()).add(d["kind"])
    return made, users


@pytest.mark.parametrize("example", EXAMPLES)
def test_only_the_backup_claim_waits_for_a_cronjob(example: str) -> None:
    made, users = claims_and_users(example_values(example))
    # What --wait brings up itself: a Deployment's or StatefulSet's pods (a Job's run too, but Helm 3 waits for
    # Jobs only with --wait-for-jobs, and a Job of a later upgrade may not run again).
    late = {c for c in made if not users.get(c, set()) & {"Deployment", "StatefulSet"}}
    assert late <= {"ragfr-backup"}, f"{example}: claims no Deployment or StatefulSet mounts: {sorted(late)}"
    if "ragfr-backup" in made:
        assert users.get("ragfr-backup") == {"CronJob"}, users.get("ragfr-backup")


def test_the_notes_say_the_first_backup_binds_the_volume() -> None:
    files = render_raw(example_values("backup-pvc"))
    notes = next(t for p, t in files.items() if p.endswith("NOTES.txt"))
    assert "create job --from=cronjob/ragfr-backup ragfr-backup-now" in notes
    assert re.search(r"binds the volume ragfr-backup\b.*WaitForFirstConsumer.*helm --wait", notes, re.S), notes
    # An existing claim is the operator's: bound or not, the chart says nothing of it.
    values = example_values("backup-pvc")
    values["backup"] = {**values["backup"], "pvc": {"existingClaim": "mine"}}
    other = next(t for p, t in render_raw(values).items() if p.endswith("NOTES.txt"))
    assert "binds the volume" not in other


def step13_commands() -> list[str]:
    text = (REPO / "docs" / "install.md").read_text(encoding="utf-8")
    start = text.index(STEP13)
    end = text.index("\n## ", start + len(STEP13))
    cmds = []
    for lang, line, body in fenced(REPO / "docs" / "install.md"):
        offset = len("\n".join(text.splitlines()[:line]))
        if lang == "sh" and start < offset < end:
            cmds += [c for _, c in shell_lines(body.splitlines(), line + 1)]
    return cmds


def test_step_13_upgrades_without_wait_and_binds_the_volume_at_once() -> None:
    cmds = step13_commands()
    helm = [c for c in cmds if c.startswith("helm upgrade")]
    assert len(helm) == 1, cmds
    assert "--wait" not in shlex.split(helm[0]), f"{helm[0]}: would wait for ragfr-backup, which no pod binds yet"
    after = cmds[cmds.index(helm[0]) + 1:]
    assert after and after[0].startswith("kubectl -n ragfr create job --from=cronjob/ragfr-backup "), after
    job = shlex.split(after[0])[-1]
    assert any(c.startswith(f"kubectl -n ragfr wait --for=condition=complete job/{job} ") for c in after), after
