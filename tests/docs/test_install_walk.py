"""docs/install.md walked without a cluster: every command of its ```sh blocks either runs here or is checked
against what it would act on, or is listed in NOT_HERE with the reason it cannot run on this machine.

- `helm upgrade --install … -f … --set …`: rendered by the chart with those values files (a `cp` earlier in the
  walk says which example `my-values.yaml` is) and `--set`s; the lines shown of what it prints are in the
  rendered NOTES; the images and pull policies are what the walk says.
- `kubectl create …`: run with `--dry-run=client -o yaml` in the walk's directory (after its `umask`, `printf`,
  `openssl` lines, run too); each Secret has the keys the rendered chart reads from it.
- `kubectl … -l SELECTOR`: the selector matches objects of that kind in the release as last installed.
- `kubectl get/delete KIND NAME…` and the names a `get` prints: those objects exist in that render.
- `make TARGET VAR=…`: the target exists and reads the variable; `make deploy` and `make chart-render` run
  (deploy without a cluster: it must get past its values files and stop at the missing cluster).
- `ragfr …` in the page's inline code: the command and each option it is given exist.
A command matching no check fails the test: a new command in the guide needs a check or a reason.
"""

from __future__ import annotations

import ast
import copy
import json
import os
import re
import shlex
import shutil
import subprocess
import tempfile
import textwrap
from collections.abc import Iterator
from dataclasses import dataclass
from functools import cache, cached_property
from pathlib import Path
from typing import Any

import pytest
import yaml
from tests.docs.test_doc_references import commands as ragfr_commands
from tests.docs.test_doc_references import make_targets
from tests.support.chart import CHART, NAMESPACE, RELEASE, chart, render_raw
from tests.support.paths import REPO
from tests.support.walk_checks import PROBE, migration_probe, openwebui_data_claims, restore_pod_problems

from ragfr.cli import build_parser

DOC = REPO / "docs" / "install.md"
# The guide and its reference pages (moved out of it, issue 48): their commands are walked in this order.
PAGES = (DOC, *sorted((REPO / "docs" / "reference").glob("*.md")))
APP_VERSION = yaml.safe_load((CHART / "Chart.yaml").read_text())["appVersion"]
IMAGE_NAMES = re.search(r"^NAMES=\(([^)]*)\)", (REPO / "scripts" / "images.sh").read_text(), re.M).group(1).split()  # type: ignore[union-attr]

# Commands that need the nodes or a live release, each with why; matched on the command's start.
NOT_HERE: dict[str, str] = {
    "ssh ": "runs on a k3s node (k3s ctr / crictl exist only there); tests/images/test_images.py imports the "
            "same archives into a private containerd with the ctr k3s embeds",
    "for n in ": "a loop of ssh commands to the nodes (see ssh); the archive names it imports are checked",
    "cd ragfr-images-": "needs the archives `make images-save` writes (minutes of podman; "
                        "tests/images/test_images.py checks the sums)",
    "kubectl get nodes": "needs the cluster; the node names it prints are checked against the example's "
                         "nodeSelectors",
    "helm test ": "needs an installed release; its Pod (helm.sh/hook: test) is checked in the render",
    "helm uninstall ": "needs an installed release",
    "api=": "Open WebUI's REST API of a running release: tests/owui/test_e2e.py makes the same calls against "
            "the real, patched Open WebUI outside a cluster",
    "token=": "as api=",
    "read -rs ": "as api= (the administrator's password, typed)",
    "kb=": "as api=",
    "file=": "as api=",
    "curl ": "as api=",
    "mkdir -p ~/.kube": "the kubeconfig's copy onto the operator's machine (Reference: it needs the k3s server)",
    "chmod 600 ~/.kube/config": "as mkdir -p ~/.kube",
    "install -m 600 /etc/rancher/k3s/k3s.yaml ": "as mkdir -p ~/.kube, on the k3s server itself",
    "echo 'export KUBECONFIG=/etc/rancher/k3s/k3s.yaml' >> ~/.profile": "root's profile on the k3s server",
    "systemctl disable --now ": "stops the services make setup's apt step starts, on a k3s node (step 1)",
    "python3 -m venv .venv-ops": "the operator's light venv (reference/cli.md): PyPI, minutes",
    ".venv-ops/bin/pip install ": "as python3 -m venv .venv-ops",
    "sed -i 's/127": "as mkdir -p ~/.kube",
    "kubectl -n ragfr port-forward ": "needs a running release; the Services it forwards are checked by "
                                      "test_the_cli_section_forwards_the_release_s_services",
    "export ": "the CLI's environment for a port-forward (see kubectl -n ragfr port-forward)",
    "make setup": "builds pgvector and the venvs (apt, minutes); the target exists",
    "make run ": "the quick start's one command for steps 1, 2 and 7 on a k3s server: needs the cluster (without one "
                 "it refuses with VALUES: tests/chart/test_deploy.py); the walk renders the same values at step 7",
    "make images": "builds or ships the images with podman (minutes; tests/images covers them); the target "
                   "exists and reads the variable given",
}
LOCAL_SHELL = ("umask ", "printf ", "openssl ")  # run here as written, in the walk's directory
KINDS = {"pvc": "PersistentVolumeClaim", "svc": "Service", "ingress": "Ingress", "networkpolicy": "NetworkPolicy",
         "secret": "Secret", "job": "Job", "jobs": "Job", "pods": "Pod", "pod": "Pod"}


@dataclass
class Command:
    line: int
    text: str
    output: str | None  # the ```text block right after the command's block, for its last command

    def argv(self) -> list[str]:
        return shlex.split(self.text)

    page: str = "docs/install.md"

    def where(self) -> str:
        return f"{self.page}:{self.line}: {self.text[:100]}"


def pages_text() -> str:
    return "\n".join(p.read_text(encoding="utf-8") for p in PAGES)


def fenced(page: Path = DOC) -> Iterator[tuple[str, int, str]]:
    """(language, line of the opening fence, body) of each fenced block."""
    lines = page.read_text(encoding="utf-8").splitlines()
    i = 0
    while i < len(lines):
        m = re.match(r"\s*```(\w*)\s*(\S*)\s*$", lines[i])
        if m:
            start, body = i + 1, []
            i += 1
            while not re.match(r"\s*```\s*$", lines[i]):
                body.append(lines[i])
                i += 1
            # ```yaml my-values.yaml: keys the guide adds to my-values.yaml (language "yaml:my-values.yaml")
            yield m.group(1) + (f":{m.group(2)}" if m.group(2) else ""), start, "\n".join(body)
        i += 1


@cache
def walk() -> tuple[Command, ...]:
    return tuple(c for page in PAGES for c in page_walk(page))


def page_walk(page: Path) -> list[Command]:
    rel = str(page.relative_to(REPO))
    blocks = list(fenced(page))
    out: list[Command] = []
    for k, (lang, start, body) in enumerate(blocks):
        if lang == "yaml:my-values.yaml":
            out.append(Command(start, "@my-values.yaml", body, rel))
            continue
        if lang != "sh":
            continue
        # What it prints: the next ```text block, when no other command block comes first.
        following = blocks[k + 1] if k + 1 < len(blocks) else None
        adjacent = following is not None and following[0] == "text"
        cmds: list[Command] = []
        pending, first, depth = "", 0, 0
        for n, raw in enumerate(body.splitlines(), start=start + 1):
            line = raw.strip()
            if not pending and (not line or line.startswith("#")):
                continue
            if not pending:
                first = n
            pending = f"{pending} {line}".strip()
            if pending.endswith("\\"):
                pending = pending[:-1].rstrip()
                continue
            depth += len(re.findall(r"(?:^|;\s*|\s)for\s", line)) - len(re.findall(r"(?:^|;\s*|\s)done\b", line))
            if depth > 0:
                continue
            cmds.append(Command(first, pending, None, rel))
            pending = ""
        if cmds and adjacent:
            cmds[-1].output = following[2]  # type: ignore[index]
        out.extend(cmds)
    return out


# --- values and renders -------------------------------------------------------------------------------------

def deep_merge(base: dict[str, Any], over: dict[str, Any]) -> dict[str, Any]:
    out = dict(base)
    for k, v in over.items():
        out[k] = deep_merge(out[k], v) if isinstance(v, dict) and isinstance(out.get(k), dict) else v
    return out


def is_subset(part: Any, whole: Any) -> bool:
    if isinstance(part, dict):
        return isinstance(whole, dict) and all(k in whole and is_subset(v, whole[k]) for k, v in part.items())
    return bool(part == whole)


def scalar(text: str) -> Any:
    if text in ("true", "false"):
        return text == "true"
    return int(text) if re.fullmatch(r"-?\d+", text) else text


def set_path(values: dict[str, Any], path: str, value: Any) -> None:
    *parents, leaf = path.split(".")
    for p in parents:
        values = values.setdefault(p, {})
    values[leaf] = value


@cache
def parsed(files: tuple[tuple[str, str], ...]) -> tuple[dict[str, Any], ...]:
    """The objects of a render: the walks render the same values again and again (libyaml's loader gives the same
    objects as yaml.safe_load_all, tests/support/chart.py), parsed once each."""
    return tuple(d for p, t in files if not p.endswith("NOTES.txt") for d in yaml.load_all(t, Loader=yaml.CSafeLoader)
                 if d)


@dataclass
class Release:
    values: dict[str, Any]
    files: dict[str, str]

    @property
    def notes(self) -> str:
        return next(t for p, t in self.files.items() if p.endswith("NOTES.txt"))

    @cached_property
    def objects(self) -> list[dict[str, Any]]:
        return copy.deepcopy(list(parsed(tuple(sorted(self.files.items())))))

    def named(self, kind: str) -> dict[str, dict[str, Any]]:
        out = {d["metadata"]["name"]: d for d in self.objects if d["kind"] == kind}
        if kind == "PersistentVolumeClaim":  # a StatefulSet's claims: <template>-<set>-<ordinal>
            for s in (d for d in self.objects if d["kind"] == "StatefulSet"):
                for t in s["spec"].get("volumeClaimTemplates", []):
                    for i in range(s["spec"].get("replicas", 1)):
                        out[f"{t['metadata']['name']}-{s['metadata']['name']}-{i}"] = t
        return out

    def pods(self) -> Iterator[tuple[dict[str, str], dict[str, Any]]]:
        """(labels, pod spec) of every pod the release runs."""
        for d in self.objects:
            if d["kind"] == "Pod":
                yield d["metadata"].get("labels", {}), d["spec"]
            elif d["kind"] in ("Deployment", "StatefulSet", "Job"):
                t = d["spec"]["template"]
                yield t["metadata"].get("labels", {}), t["spec"]

    def containers(self) -> Iterator[dict[str, Any]]:
        for _, spec in self.pods():
            yield from spec.get("initContainers", [])
            yield from spec.get("containers", [])


class Walk:
    """The state the guide builds as it goes: files in its directory, `my-values.yaml`'s origin, the renders."""

    def __init__(self, directory: Path) -> None:
        self.dir = directory
        self.aliases: dict[str, Path] = {}
        self.releases: list[tuple[Command, Release]] = []
        self.jobs: dict[str, str] = {}  # Jobs the walk made with `kubectl create job --from=cronjob/…` -> CronJob

    def values_file(self, name: str) -> Path:
        if name in self.aliases:
            return self.aliases[name]
        path = REPO / name
        assert path.is_file(), f"values file {name} is neither an example nor copied earlier in the walk"
        return path

    def helm_install(self, cmd: Command) -> Release:
        argv = cmd.argv()
        assert argv[:3] == ["helm", "upgrade", "--install"], cmd.where()
        assert argv[3] == RELEASE and argv[4] == "charts/ragfr", cmd.where()
        values: dict[str, Any] = {}
        i = 5
        while i < len(argv):
            a = argv[i]
            if a in ("-n", "--namespace"):
                assert argv[i + 1] == NAMESPACE, cmd.where()
                i += 2
            elif a in ("-f", "--values"):
                values = deep_merge(values, yaml.safe_load(self.values_file(argv[i + 1]).read_text()) or {})
                i += 2
            elif a == "--set":
                for pair in argv[i + 1].split(","):
                    key, _, value = pair.partition("=")
                    set_path(values, key, scalar(value))
                i += 2
            elif a == "--timeout":
                assert re.fullmatch(r"\d+[smh]", argv[i + 1]), cmd.where()
                i += 2
            else:
                assert a in ("--create-namespace", "--wait"), f"{cmd.where()}: option {a} not checked"
                i += 1
        release = Release(values, render_raw(values))
        self.releases.append((cmd, release))
        return release

    def current(self) -> Release:
        """The release as the guide last installed it (before its first install: the first install)."""
        return self.releases[-1][1] if self.releases else self.first

    first: Release


def selector_matches(selector: str, labels: dict[str, str]) -> bool:
    for term in selector.split(","):
        if "!=" in term:
            k, v = term.split("!=", 1)
            if labels.get(k) == v:
                return False
        elif "=" in term:
            k, v = term.split("=", 1)
            if labels.get(k) != v.lstrip("="):
                return False
        elif term not in labels:
            return False
    return True


def kubectl(*args: str, cwd: Path) -> tuple[dict[str, Any], str]:
    """The object a `kubectl create` would send, and the line it prints (without " (dry run)")."""
    env = {k: v for k, v in os.environ.items() if k != "KUBECONFIG"}
    env["HOME"] = str(cwd)
    out = []
    for extra in (["-o", "yaml"], []):
        done = subprocess.run(["kubectl", *args, "--dry-run=client", *extra], cwd=cwd, env=env,
                              capture_output=True, text=True, timeout=60)
        assert done.returncode == 0, f"kubectl {' '.join(args)}: {done.stderr}"
        out.append(done.stdout)
    return yaml.safe_load(out[0]), out[1].strip().removesuffix(" (dry run)")


def secret_references(release: Release) -> dict[str, set[str]]:
    """Secret name -> the keys the rendered chart reads from it (env, envFrom excluded; TLS of Ingresses)."""
    refs: dict[str, set[str]] = {}
    for c in release.containers():
        for e in c.get("env", []):
            ref = (e.get("valueFrom") or {}).get("secretKeyRef")
            if ref:
                refs.setdefault(ref["name"], set()).add(ref["key"])
    for ing in (d for d in release.objects if d["kind"] == "Ingress"):
        for tls in ing["spec"].get("tls", []):
            refs.setdefault(tls["secretName"], set()).update({"tls.crt", "tls.key"})
    return refs


def is_ragfr_image(image: str) -> bool:
    return any(re.search(rf"(^|/)ragfr/{n}[:@]", image) for n in IMAGE_NAMES)


# --- the walk --------------------------------------------------------------------------------------------------

CHECKED: list[str] = []


def run_walk(directory: Path) -> Walk:
    w = Walk(directory)
    cmds = walk()
    installs = [c for c in cmds if c.text.startswith("helm upgrade --install")]
    assert installs, "the guide installs nothing?"
    for c in cmds:  # `my-values.yaml` is known before the first install is rendered
        if c.text.startswith("cp "):
            _, src, dst = c.argv()
            assert (REPO / src).is_file(), c.where()
            shutil.copy(REPO / src, directory / dst)
            w.aliases[dst] = REPO / src
            break
    w.first = w.helm_install(installs[0])
    w.releases.clear()
    created: list[tuple[Command, dict[str, Any]]] = []
    said: set[str] = set()
    for c in cmds:
        t = c.text
        reason = next((r for prefix, r in NOT_HERE.items() if t.startswith(prefix)), None)
        if t == "@my-values.yaml":  # the keys the guide adds to my-values.yaml, merged as the operator does
            mine = directory / "my-values.yaml"
            merged = deep_merge(yaml.safe_load(mine.read_text()) or {}, yaml.safe_load(c.output or "") or {})
            mine.write_text(yaml.safe_dump(merged))
            w.aliases["my-values.yaml"] = mine
        elif t.startswith("helm upgrade --install"):
            check_install(w, c, w.helm_install(c))
        elif t.startswith("cp "):
            pass  # done above
        elif t.startswith(LOCAL_SHELL):
            done = subprocess.run(["bash", "-c", t], cwd=directory, capture_output=True, text=True, timeout=60)
            assert done.returncode == 0, f"{c.where()}: {done.stderr}"
        elif re.match(r"kubectl -n \S+ create job --from=cronjob/", t):
            check_job_from_cronjob(w, c)
        elif re.match(r"kubectl -n \S+ (wait|logs) (\S+ )*job/", t):
            check_job_made(w, c)
        elif re.match(r"kubectl (-n \S+ )?create ", t):
            if t.startswith("kubectl -n ragfr create secret tls"):
                make_certificate(c, directory)
            obj, printed = kubectl(*c.argv()[1:], cwd=directory)
            created.append((c, obj))
            said.add(printed)
            for line in (c.output or "").splitlines():  # what the guide shows it prints
                assert line in said, f"{c.where()}: the guide shows {line!r}; kubectl printed {sorted(said)}"
        elif t.startswith("kubectl") and " -l " in t:
            check_selector(w, c)
        elif re.match(r"kubectl -n ragfr (get|delete) ", t):
            check_names(w, c)
        elif t.startswith("make "):
            if not check_make(w, c):
                assert reason, f"{c.where()}: make target neither run here nor listed in NOT_HERE"
                CHECKED.append(f"not here: {c.where()} ({reason})")
                continue
        elif reason:
            if t.startswith("kubectl get nodes"):
                check_nodes(w, c)
            elif t.startswith("helm test"):
                assert any(d["kind"] == "Pod" and d["metadata"].get("annotations", {}).get("helm.sh/hook") == "test"
                           for d in w.current().objects), c.where()
            elif t.startswith("for n in ") and "import" in t:
                check_import_loop(c)
            elif t.startswith("for n in ") and "images ls" in t:
                check_image_list(c, w)
            CHECKED.append(f"not here: {c.where()} ({reason})")
            continue
        else:
            pytest.fail(f"{c.where()}: no check for this command and no reason in NOT_HERE")
        CHECKED.append(f"checked: {c.where()}")
    check_secrets(w, created)
    return w


def check_install(w: Walk, c: Command, release: Release) -> None:
    if c.output and "NOTES:" in c.output:
        head, notes_shown = c.output.split("NOTES:", 1)
        fields = dict(line.split(": ", 1) for line in head.splitlines() if ": " in line)
        assert fields["NAME"] == RELEASE and fields["NAMESPACE"] == NAMESPACE, (c.where(), fields)
        assert f'Release "{RELEASE}" does not exist. Installing it now.' in head, c.where()
        shown = notes_shown.splitlines()
        notes = release.notes.splitlines()
        for line in shown:
            if line.strip() and "…" not in line:
                assert line in notes, f"{c.where()}: the guide shows {line!r}, the chart's NOTES do not print it"
    images = {(c2["image"], c2.get("imagePullPolicy")) for c2 in release.containers()}
    registry = release.values.get("global", {}).get("imageRegistry")
    ours = [(i, p) for i, p in images if is_ragfr_image(i)]
    assert len({i for i, _ in ours}) == len(IMAGE_NAMES), (c.where(), ours)
    if registry:  # step 2's registry: every image from it, the ragfr ones pulled again
        assert all(i.startswith(f"{registry}/") for i, _ in images), (c.where(), images)
        assert all(p == "IfNotPresent" for _, p in ours), (c.where(), ours)
    elif w.aliases.get("my-values.yaml") and "my-values.yaml" in c.text:
        # step 2: imported images are never pulled, so a node that missed them never pulls docker.io/ragfr/*
        assert all(p == "Never" and i.startswith("localhost/ragfr/") for i, p in ours), (c.where(), ours)


def make_certificate(c: Command, directory: Path) -> None:
    argv = c.argv()
    crt = next(a.split("=", 1)[1] for a in argv if a.startswith("--cert="))
    key = next(a.split("=", 1)[1] for a in argv if a.startswith("--key="))
    subprocess.run(["openssl", "req", "-x509", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:prime256v1",
                    "-nodes", "-days", "2", "-subj", "/CN=chat.lan.example", "-keyout", str(directory / key),
                    "-out", str(directory / crt)], check=True, capture_output=True)


def check_secrets(w: Walk, created: list[tuple[Command, dict[str, Any]]]) -> None:
    assert created, "the guide creates no Secret?"
    refs: dict[str, set[str]] = {}
    for _, release in w.releases:
        for name, keys in secret_references(release).items():
            refs.setdefault(name, set()).update(keys)
    for c, obj in created:
        if obj["kind"] == "Namespace":
            assert obj["metadata"]["name"] == NAMESPACE, c.where()
            continue
        assert obj["kind"] == "Secret" and obj["metadata"]["namespace"] == NAMESPACE, c.where()
        name, keys = obj["metadata"]["name"], set(obj.get("data", {}))
        assert name in refs, f"{c.where()}: no rendered release of the guide reads Secret {name}"
        assert refs[name] <= keys, f"{c.where()}: the chart reads keys {sorted(refs[name] - keys)} it lacks"
        assert all(v for v in obj["data"].values()), f"{c.where()}: an empty key"


def check_job_from_cronjob(w: Walk, c: Command) -> None:
    """`kubectl create job --from=cronjob/NAME JOB` (a backup set now, step 13): the release has that CronJob."""
    argv = c.argv()
    cronjob = next(a.split("/", 1)[1] for a in argv if a.startswith("--from=cronjob/"))
    assert cronjob in w.current().named("CronJob"), f"{c.where()}: no CronJob {cronjob} in the rendered release"
    w.jobs[argv[-1]] = cronjob


def script_lines(script: str) -> list[re.Pattern[str]]:
    """What a chart script may print: each of its `echo "..."` lines, the shell's expansions as wildcards."""
    out = []
    for m in re.finditer(r'^\s*echo "(.*)"', (CHART / "files" / script).read_text(), re.M):
        text, before = m.group(1), None
        while text != before:  # innermost $(...) and $((...)) first: they nest
            before, text = text, re.sub(r"\$\(\(?[^()]*\)?\)", "\0", text)
        parts = re.split(r"\0|\$\{[^}]*\}|\$\w+", text)
        out.append(re.compile(".+".join(re.escape(p) for p in parts) + "$"))
    return out


def check_job_made(w: Walk, c: Command) -> None:
    """`kubectl wait/logs job/JOB` on a Job the walk made from a CronJob: the lines shown are its script's."""
    name = re.search(r"\bjob/(\S+)", c.text).group(1)  # type: ignore[union-attr]
    assert name in w.jobs, f"{c.where()}: job/{name} was made by no earlier command of the walk"
    cronjob = w.current().named("CronJob")[w.jobs[name]]
    pod = cronjob["spec"]["jobTemplate"]["spec"]["template"]["spec"]
    scripts = {Path(a).name for ct in pod.get("initContainers", []) + pod["containers"]
               for a in ct.get("command", []) if a.endswith(".sh")}
    patterns = [p for s in scripts for p in script_lines(s)]
    for line in (c.output or "").splitlines():
        assert any(p.match(line) for p in patterns), f"{c.where()}: {line!r} is no line {sorted(scripts)} prints"


def check_selector(w: Walk, c: Command) -> None:
    argv = c.argv()
    selector = argv[argv.index("-l") + 1]
    words = [a for a in argv[1:] if not a.startswith("-") and a not in (NAMESPACE, selector)]
    verb = words[0]
    kind = "Pod" if verb == "logs" else KINDS[words[1]]
    release = w.current()
    if kind == "Pod":
        matched = [labels for labels, _ in release.pods() if selector_matches(selector, labels)]
    else:
        matched = [d for d in release.objects if d["kind"] == kind
                   and selector_matches(selector, d["metadata"].get("labels", {}))]
    assert matched, f"{c.where()}: selector {selector} matches no {kind} of the rendered release"


def listed_names(output: str, kind: str) -> list[str]:
    rows = [r for r in output.splitlines() if r.strip() and not r.startswith("NAME ")]
    names = [r.split()[0].rsplit("/", 1)[-1] for r in rows]
    return [n for n in names if "…" not in n]


def check_names(w: Walk, c: Command) -> None:
    argv = c.argv()
    words = [a for a in argv[4:] if not a.startswith("-") and a != "name"]
    kind, names = KINDS[words[0]], words[1:]
    release = w.current()
    existing = release.named(kind)
    for n in names:
        assert n in existing, f"{c.where()}: no {kind} {n} in the rendered release"
    if c.output:
        shown = listed_names(c.output, kind)
        assert shown, c.where()
        for n in shown:
            assert n in existing, f"{c.where()}: the guide shows {kind} {n}, which the release does not have"
        if kind == "NetworkPolicy":
            assert set(shown) == set(existing), (c.where(), sorted(existing))
        if kind == "PersistentVolumeClaim":
            assert set(shown) == set(existing), (c.where(), sorted(existing))
            for row in c.output.splitlines()[1:]:
                name, _, _, capacity, *_ = row.split()
                assert capacity == existing[name]["spec"]["resources"]["requests"]["storage"], row
        if kind == "Service":
            for row in c.output.splitlines()[1:]:
                name, type_, *_ = row.split()
                svc = existing[name]
                assert type_ == svc["spec"]["type"], row
                port = svc["spec"]["ports"][0]
                assert f"{port['port']}:{port['nodePort']}/TCP" in row, (row, port)
        if kind == "Ingress":
            for row in c.output.splitlines()[1:]:
                name, cls, host, *_ = row.split()
                spec = existing[name]["spec"]
                assert cls == spec["ingressClassName"] and host == spec["rules"][0]["host"], row


def check_make(w: Walk, c: Command) -> bool:
    """True when the command ran here; the target and the variables it is given are checked either way."""
    argv = c.argv()
    target, assigns = argv[1], dict(a.split("=", 1) for a in argv[2:])
    assert target in make_targets(), c.where()
    recipes = "\n".join(p.read_text() for p in [REPO / "Makefile", *(REPO / "mk").glob("*.mk")])
    for var in assigns:
        # make exports a command-line variable to its recipes: the scripts they run may read it from there
        scripts = [REPO / "scripts" / f for f in ("deploy.sh", "images.sh", "run.sh") if (REPO / "scripts" / f).is_file()]
        assert f"$({var})" in recipes or any(re.search(rf"\b{var}\b", p.read_text()) for p in scripts), (c.where(), var)
    if target == "deploy":
        files = " ".join(str(w.values_file(f)) for f in assigns.get("VALUES", "").split())
        env = {k: v for k, v in os.environ.items() if k not in ("KUBECONFIG", "KUBERNETES_SERVICE_HOST")}
        env.update(HOME=str(w.dir), PATH="/usr/bin:/bin", VALUES=files)
        done = subprocess.run(["make", "-s", "-C", str(REPO), "deploy", *(f"{k}={v}" for k, v in assigns.items()
                                                                          if k != "VALUES")],
                              env=env, capture_output=True, text=True, timeout=120)
        assert done.returncode == 2 and "deploy: no Kubernetes cluster configured" in done.stderr, \
            (c.where(), done.stderr)
        return True
    if target == "chart-render":
        # EXAMPLE= an example of the chart; VALUES= the operator's files as the walk has written them so far
        given = (f"EXAMPLE={assigns['EXAMPLE']}" if "EXAMPLE" in assigns
                 else "VALUES=" + " ".join(str(w.values_file(f)) for f in assigns["VALUES"].split()))
        done = subprocess.run(["make", "-s", "-C", str(REPO), "chart-render", given],
                              capture_output=True, text=True, timeout=300)
        assert done.returncode == 0, (c.where(), done.stderr[-2000:])
        kinds = {d["kind"] for d in yaml.safe_load_all(done.stdout) if d}
        assert {"StatefulSet", "Deployment", "Job"} <= kinds, (c.where(), kinds)
        return True
    return False


def check_nodes(w: Walk, c: Command) -> None:
    assert c.output, c.where()
    nodes = {r.split()[0] for r in c.output.splitlines()[1:]}
    pinned = {spec["nodeSelector"]["kubernetes.io/hostname"] for _, spec in w.first.pods()
              if "kubernetes.io/hostname" in spec.get("nodeSelector", {})}
    assert pinned and pinned <= nodes, (c.where(), pinned, nodes)


def check_import_loop(c: Command) -> None:
    archives = re.search(r"for f in ([^;]+);", c.text).group(1).split()  # type: ignore[union-attr]
    assert sorted(archives) == sorted(f"{n}-{APP_VERSION}.oci.tar" for n in IMAGE_NAMES), c.where()
    assert "import - <" in c.text, c.where()  # ctr images import reads standard input with "-"


def containerd_name(image: str) -> str:
    """The name containerd lists for a reference: a first component that is no host means docker.io."""
    first = image.split("/", 1)[0]
    return image if "." in first or ":" in first or first == "localhost" else f"docker.io/{image}"


def check_image_list(c: Command, w: Walk) -> None:
    # What `k3s ctr images ls` shows after the import: the names of the images the first install renders.
    assert c.output, c.where()
    wanted = {containerd_name(ct["image"]) for ct in w.first.containers() if is_ragfr_image(ct["image"])}
    refs = {r for r in c.output.splitlines() if r.strip() and r.strip() != "…" and not r.startswith("==")}
    assert wanted and refs == wanted, (c.where(), refs, wanted)


# --- tests ---------------------------------------------------------------------------------------------------

def test_every_command_of_the_walk_is_run_or_checked_or_said_why_not(tmp_path: Path) -> None:
    if not shutil.which("kubectl"):
        pytest.skip("kubectl (the client only: --dry-run=client) is not installed")
    CHECKED.clear()
    run_walk(tmp_path)
    checked = [x for x in CHECKED if x.startswith("checked")]
    assert len(walk()) == len(CHECKED) and len(checked) >= 20, "\n".join(CHECKED)


def test_the_walk_installs_first_with_the_example_it_copies() -> None:
    installs = [c for c in walk() if c.text.startswith("helm upgrade --install")]
    copy = next(c for c in walk() if c.text.startswith("cp "))
    assert copy.argv()[1] == "charts/ragfr/examples/k3s-first-install.yaml" and copy.line < installs[0].line
    # Step 10's two ways are the examples' lines, added to my-values.yaml (not a second -f a later step forgets).
    blocks = [yaml.safe_load(b) for lang, _, b in fenced() if lang == "yaml:my-values.yaml"]
    for name in ("lan-traefik", "lan-servicelb"):
        example = yaml.safe_load((CHART / "examples" / f"{name}.yaml").read_text())
        assert any(b and is_subset(b, example) and "openwebui" in b for b in blocks), name
    assert not [a for c in installs for a in c.argv() if a.startswith("charts/ragfr/examples/")]


def test_the_images_built_are_the_chart_s() -> None:
    # What `make images` ends with (step 1): the references the chart renders by default, as podman names them.
    shown = next(b for lang, _, b in fenced() if lang == "text" and b.startswith("localhost/"))
    refs = [r.split()[0] for r in shown.splitlines()]
    assert refs == [f"localhost/ragfr/{n}:{APP_VERSION}" for n in IMAGE_NAMES]


def test_the_refusal_shown_is_the_gate_s() -> None:
    tree = ast.parse((REPO / "src" / "ragfr" / "owui" / "runtime" / "chat_gate.py").read_text())
    consts = {t.id: n.value.value for n in tree.body if isinstance(n, ast.Assign) and isinstance(n.value, ast.Constant)
              for t in n.targets if isinstance(t, ast.Name)}
    refusal = next(b for lang, _, b in fenced() if lang == "text" and b.startswith("Les documents"))
    lines = refusal.splitlines()
    assert lines[0] == consts["REFUSAL"] and lines[2] == consts["CLOSEST"]
    assert "`" + str(consts["NO_PASSAGE"]) + "`" in pages_text()


def test_every_ragfr_command_of_the_page_has_its_options() -> None:
    verbs = ragfr_commands()
    parser = build_parser()
    sub = next(a for a in parser._actions if a.__class__.__name__ == "_SubParsersAction")
    found = 0
    for span in re.findall(r"`(ragfr [a-z][^`]*)`", pages_text()):
        if "…" in span or "<" in span:
            continue
        argv = shlex.split(span)[1:]
        assert argv[0] in verbs, span
        p = sub.choices[argv[0]]  # type: ignore[index]
        rest = argv[1:]
        if verbs[argv[0]] and rest and rest[0] in verbs[argv[0]]:
            inner = next(a for a in p._actions if a.__class__.__name__ == "_SubParsersAction")
            p, rest = inner.choices[rest[0]], rest[1:]
        for opt in (a.split("=", 1)[0] for a in rest if a.startswith("-")):
            assert opt in p._option_string_actions, f"{span}: {opt} is not an option of it"
        found += 1
    assert found >= 4


def test_inline_make_commands_of_the_walk_run(tmp_path: Path) -> None:
    w = Walk(tmp_path)
    shutil.copy(CHART / "examples" / "k3s-first-install.yaml", tmp_path / "my-values.yaml")
    w.aliases["my-values.yaml"] = CHART / "examples" / "k3s-first-install.yaml"
    spans = re.findall(r"`(make (?:deploy|chart-render) [A-Z]+=[^`]+)`", pages_text())
    assert len(spans) >= 2
    for span in spans:
        assert check_make(w, Command(0, span, None)), span


# --- the walk across documents ---------------------------------------------------------------------------------
# An operator follows docs/install.md, then the runbooks, in this order, with ONE values file: `my-values.yaml`,
# made by the guide's `cp` and grown by the blocks marked ```yaml my-values.yaml (keys to add to it). Each `helm
# upgrade` / `make deploy VALUES=…` / `make run VALUES=…` of these pages (fenced ```sh blocks and inline code) is
# rendered with the values it names, as the walk has built them so far, and compared with what my-values.yaml
# renders: a command that renders another image, pull policy, node, admin Secret, exposure or pull Secret than the
# operator's file undoes what an earlier step set (or sets something the next `-f my-values.yaml` forgets). The
# rendered NetworkPolicies must admit the ingress controller the release's Ingress is for (Traefik on k3s), and no
# ragfr image may resolve to docker.io/ragfr. A page offering a choice marks each branch with
# `<!-- walk: key=value -->` … `<!-- walk: end -->`; every path of PATHS is walked.
# At chart-upgrade.md's first upgrade the chart is rendered again from a copy of the checkout with one more
# migration: the migrations Job must change name (tests/support/walk_checks.py). `kubectl scale` is followed; the
# restore pod (restore.md's `make restore-job`, run, or a pod a page builds from the backup CronJob's template)
# must need no pod the walk has scaled away, and write only on writable mounts, the uploads on Open WebUI's data claim.

# The second month in the order an operator meets it (issue 48): an upgrade that adds a migration, the gate's
# calibration, going air-gapped (and its models), an embedding migration air-gapped, a restore.
WALK_DOCS = ("docs/install.md", "docs/runbooks/chart-upgrade.md", "docs/runbooks/gate-calibration.md",
             "docs/runbooks/air-gapped-install.md", "docs/runbooks/ollama-models-offline.md",
             "docs/runbooks/embedding-migration.md", "docs/runbooks/restore.md",
             "docs/runbooks/calibrate-relevance-threshold.md", "docs/runbooks/rollback.md")
# Pages whose helm commands must render at least once: the day-one guide and the second month.
SECOND_MONTH = ("docs/install.md", "docs/runbooks/chart-upgrade.md", "docs/runbooks/gate-calibration.md",
                "docs/runbooks/air-gapped-install.md", "docs/runbooks/embedding-migration.md",
                "docs/runbooks/restore.md")
PATHS: dict[str, dict[str, str]] = {
    "imported, Traefik, migration in the cluster": {"images": "imported", "lan": "traefik", "embedding": "k8s"},
    "registry, ServiceLB, destructive re-embedding": {"images": "registry", "lan": "servicelb",
                                                      "embedding": "destructive"},
}
# Where each ingress class's controller runs (k3s bundles Traefik in kube-system), as the evaluator of
# tests/chart/test_networkpolicy.py labels a pod of another namespace.
CONTROLLERS = {"traefik": {"_ns": "kube-system", "app.kubernetes.io/name": "traefik"},
               "nginx": {"_ns": "ingress-nginx", "app.kubernetes.io/name": "ingress-nginx"}}
WALK_COMMAND = re.compile(r"^(?:\S+=\S+ )*(helm (?:upgrade|install)\b|make (?:deploy|run|images-push|restore-job)\b"
                          r"|cp \S+ my-values\.yaml|ragfr gate calibrate\b"
                          r"|kubectl (?:-n \S+ )?(?:get|wait|logs|delete|describe)\b.* -l |kubectl (?:-n \S+ )?scale |rm -rf )")
# Inline spans that are commands whole, besides helm with the chart, make with its values and cp.
INLINE_WHOLE = re.compile(r"^(kubectl (?:-n \S+ )?scale \S+ --replicas=\S+$|rm -rf /)")
# How restore.md once built its restore pod (c423653): the backup CronJob's pod template copied into a Job, the
# container's command and env changed as the page lists them. The walk builds that pod the same way.
DERIVED_POD = re.compile(r"\bcop(?:y|ies) (?:its|the (?:backup )?CronJob's) pod template into a Job", re.I)
# The upgrade of the second month adds a migration: there, the walk renders the chart with one more (issue 48).
UPGRADE_PAGE = "docs/runbooks/chart-upgrade.md"
RESTORE_PAGE = "docs/runbooks/restore.md"
# A value of a ```yaml my-values.yaml block that the operator copies from a file an earlier command wrote:
# `calibration: <openwebui.gate.calibration of gate-values.yaml>`.
COPIED = re.compile(r"^<([\w.]+) of ([\w.-]+\.yaml)>$")


@dataclass
class Step:
    doc: str
    line: int
    kind: str  # "command" | "values" (keys added to my-values.yaml) | "file" (a values file the page writes)
    text: str
    choice: dict[str, str]
    data: Any = None

    def where(self) -> str:
        return f"{self.doc}:{self.line}: {self.text[:110]}"


def shell_lines(body: list[str], start: int) -> Iterator[tuple[int, str]]:
    """(line, command) of a shell block: continuation lines joined, here-documents skipped."""
    pending, first, heredoc = "", 0, None
    for n, raw in enumerate(body, start=start):
        line = raw.strip()
        if heredoc is not None:
            heredoc = None if line == heredoc else heredoc
            continue
        if not pending and (not line or line.startswith("#")):
            continue
        if not pending:
            first = n
        pending = f"{pending} {line}".strip()
        m = re.search(r"<<-?'?(\w+)'?", line)
        if m:
            heredoc = m.group(1)
        if pending.endswith("\\"):
            pending = pending[:-1].rstrip()
            continue
        yield first, pending
        pending = ""


def doc_steps(rel: str, root: Path = REPO) -> list[Step]:
    lines = (root / rel).read_text(encoding="utf-8").splitlines()
    steps: list[Step] = []
    choice: dict[str, str] = {}
    para: list[tuple[int, str]] = []

    def flush() -> None:
        if para:
            text = "\n".join(t for _, t in para)
            found: list[tuple[int, Step]] = []  # (offset in the paragraph, step): walked in the text's order
            for m in re.finditer(r"`([^`]+)`", text):
                span = " ".join(m.group(1).split())
                # A command, not a mention of one: helm with the chart, make with its values or registry.
                whole = ("charts/ragfr" in span if span.startswith("helm") else
                         re.search(r"\b(VALUES|REGISTRY)=", span) is not None if span.startswith("make") else
                         span.startswith("cp ") or INLINE_WHOLE.match(span) is not None)
                if (WALK_COMMAND.match(span) and whole) or re.match(r"--set(-string)? \S+=", span) \
                        or "--reuse-values" in span:
                    line = para[0][0] + text[:m.start()].count("\n")
                    found.append((m.start(), Step(rel, line, "command", span, dict(choice))))
            derived = DERIVED_POD.search(text)
            if derived:
                line = para[0][0] + text[:derived.start()].count("\n")
                env = {m.group(1): m.group(2) for m in re.finditer(r"`([A-Z][A-Z0-9_]*)=([^`\s]+)`", text)}
                found.append((derived.start(), Step(rel, line, "pod", derived.group(0), dict(choice),
                                                    {"env": env, "writable": "`readOnly: false`" in text})))
            steps.extend(step for _, step in sorted(found, key=lambda f: f[0]))
            para.clear()

    i = 0
    while i < len(lines):
        line = lines[i]
        if rel == "docs/install.md" and line.startswith("# Reference"):
            break  # the walk ends there; the reference sections are not steps
        marker = re.match(r"\s*<!-- walk: (.*?) -->\s*$", line)
        fence = re.match(r"\s*```(\w*)\s*(.*?)\s*$", line)
        if marker:
            flush()
            choice = {} if marker.group(1) == "end" else dict(kv.split("=", 1) for kv in marker.group(1).split())
        elif fence:
            flush()
            lang, info, start, body = fence.group(1), fence.group(2), i + 1, []
            i += 1
            while not re.match(r"\s*```\s*$", lines[i]):
                body.append(lines[i])
                i += 1
            if lang == "yaml" and info.endswith(".yaml"):
                data = yaml.safe_load(textwrap.dedent("\n".join(body))) or {}
                kind = "values" if info == "my-values.yaml" else "file"
                steps.append(Step(rel, start, kind, info, dict(choice), data))
            elif lang == "sh":
                steps.extend(Step(rel, n, "command", c, dict(choice)) for n, c in shell_lines(body, start + 1)
                             if WALK_COMMAND.match(c))
        elif not line.strip():
            flush()
        else:
            para.append((i + 1, line))
        i += 1
    flush()
    return steps


def render_operator(values: dict[str, Any]) -> dict[str, str]:
    """The chart rendered as `helm upgrade` would, with exactly these values (no image source added for it)."""
    return dict(_render_operator(json.dumps(values, sort_keys=True)))


@cache
def _render_operator(values: str) -> tuple[tuple[str, str], ...]:
    # The walk renders the same my-values.yaml after every command: once per distinct set of values is enough.
    return tuple(chart().render(json.loads(values), name=RELEASE, namespace=NAMESPACE, revision=2,
                                is_install=False).items())


def properties(release: Release) -> dict[str, Any]:
    """What an operator sets once and every later command must keep."""
    props: dict[str, Any] = {"images": sorted({f"{c['image']} ({c.get('imagePullPolicy', '-')})"
                                               for c in release.containers()})}
    for labels, spec in release.pods():
        comp = labels.get("app.kubernetes.io/component", "?")
        if comp in ("ragdb", "ollama", "openwebui"):
            props[f"nodeSelector of {comp}"] = spec.get("nodeSelector", {})
            props[f"imagePullSecrets of {comp}"] = spec.get("imagePullSecrets", [])
        if comp == "openwebui":
            env = {e["name"]: e for c in spec.get("containers", []) for e in c.get("env", [])}
            ref = (env.get("WEBUI_ADMIN_EMAIL", {}).get("valueFrom") or {}).get("secretKeyRef") or {}
            props["admin Secret"] = ref.get("name")
    props["Ingress"] = sorted((d["spec"].get("ingressClassName"), [r.get("host") for r in d["spec"]["rules"]],
                               [t.get("secretName") for t in d["spec"].get("tls", [])])
                              for d in release.objects if d["kind"] == "Ingress")
    props["Open WebUI Service"] = sorted(d["spec"].get("type", "ClusterIP") for d in release.objects
                                         if d["kind"] == "Service" and d["metadata"]["name"].endswith("-openwebui"))
    return props


def exposure_problems(release: Release) -> list[str]:
    from tests.chart.test_networkpolicy import allowed
    out = []
    owui = next((labels for labels, _ in release.pods()
                 if labels.get("app.kubernetes.io/component") == "openwebui"), None)
    for ing in (d for d in release.objects if d["kind"] == "Ingress"):
        cls = ing["spec"].get("ingressClassName")
        src = CONTROLLERS.get(cls)
        assert src is not None, f"ingress class {cls}: which controller pods? (CONTROLLERS)"
        if owui is not None and not allowed(release.objects, src, owui, 8080):
            out.append(f"the rendered NetworkPolicies do not admit the {cls} controller ({src}) to Open WebUI's "
                       f"port 8080, the Ingress {ing['metadata']['name']} is for: the UI answers 504")
    for c in release.containers():
        if re.match(rf"^(docker\.io/)?ragfr/({'|'.join(IMAGE_NAMES)})[:@]", c["image"]):
            out.append(f"image {c['image']} resolves to docker.io/ragfr, a namespace this project does not own")
    return out


def applied_settings(release: Release) -> dict[str, Any]:
    """What the second month applies once and every later command must still render (issue 48): the gate's
    calibration, the backups, the air-gapped switch (no model pull, the models' volume)."""
    env = next((d.get("data") or {} for d in release.objects
                if d["kind"] == "ConfigMap" and d["metadata"]["name"].endswith("-openwebui-env")), {})
    backups = []
    for d in release.objects:
        if d["kind"] == "CronJob" and d["metadata"].get("labels", {}).get("app.kubernetes.io/component") == "backup":
            pod = d["spec"]["jobTemplate"]["spec"]["template"]["spec"]
            env_values = sorted((e["name"], e["value"]) for c in pod.get("containers", []) for e in c.get("env", [])
                                if "value" in e)
            claims = sorted(v["persistentVolumeClaim"]["claimName"] for v in pod.get("volumes", [])
                            if "persistentVolumeClaim" in v)
            backups.append((d["spec"]["schedule"], env_values, claims))
    pulls = [d for d in release.objects if d["kind"] == "Job"
             and d["metadata"].get("labels", {}).get("app.kubernetes.io/component") == "pull-models"]
    ollama = next((spec for labels, spec in release.pods()
                   if labels.get("app.kubernetes.io/component") == "ollama"), {})
    model_claims = sorted(v["persistentVolumeClaim"]["claimName"] for v in ollama.get("volumes", [])
                          if "persistentVolumeClaim" in v)
    return {"the gate's calibration (openwebui.gate.calibration)": env.get("RAGFR_GATE_CALIBRATION"),
            "the backups (backup.*)": backups,
            "the air-gapped switch (ollama.models.pull, the models' volume)":
                {"model pull Job": bool(pulls), "Ollama's models claim": model_claims}}


@cache
def chart_defaults() -> dict[str, Any]:
    """The settings as a release that never set them renders them."""
    base = yaml.safe_load((CHART / "examples" / "k3s-first-install.yaml").read_text())
    return applied_settings(Release(base, render_operator(base)))


KUBECTL_KINDS = {**KINDS, "deploy": "Deployment", "deployment": "Deployment", "cronjob": "CronJob",
                 "statefulset": "StatefulSet", "sts": "StatefulSet", "configmap": "ConfigMap"}


class DocWalk:
    def __init__(self, path: dict[str, str], root: Path = REPO, checkout: Path = REPO) -> None:
        self.path = path
        self.root = root  # where the pages are read (another checkout's docs/, to walk an older version)
        # Whose charts/ragfr and migrations/ the upgrade adding a migration is probed with (an older checkout's,
        # to show the probe fails where that chart kept its migrations Job); every other render is this chart's.
        self.checkout = checkout
        self.probed: list[str] = []  # where the upgrade was rendered again with one more migration
        self.replicas: dict[str, int] = {}  # what `kubectl scale` set, by workload name
        self.restore_pods: list[tuple[Step, dict[str, Any], list[dict[str, Any]], dict[str, int]]] = []
        self.wipes: list[str] = []  # `rm -rf` paths the page being walked runs in its restore pod
        self.my_values: dict[str, Any] | None = None
        self.files: dict[str, dict[str, Any]] = {}
        self.last: dict[str, Any] | None = None  # values of the release as last installed
        self.problems: list[str] = []
        self.rendered: dict[str, int] = {}
        self.registry_http = False
        self.release: Release | None = None  # as last rendered
        # Settings applied once (applied_settings): value, where it was applied, the my-values.yaml edit count then.
        self.kept: dict[str, tuple[Any, str, int]] = {}
        self.kept_checks: dict[str, int] = {}  # later renders that still held it
        self.edits = 0  # ```yaml my-values.yaml blocks merged so far
        self.mine_settings: dict[str, tuple[Any, int]] = {}  # what my-values.yaml renders, since which edit

    def problem(self, step: Step, message: str) -> None:
        self.problems.append(f"{step.where()}\n    -> {message}")

    def values_file(self, step: Step, name: str) -> dict[str, Any] | None:
        if name == "my-values.yaml":
            if self.my_values is None:
                self.problem(step, "my-values.yaml is used before any step made it")
            return copy.deepcopy(self.my_values)
        if name in self.files:
            return copy.deepcopy(self.files[name])
        if name in ("values.yaml", "charts/ragfr/values.yaml"):
            self.problem(step, "-f values.yaml is the chart's own file, not the operator's my-values.yaml: every "
                               "setting of my-values.yaml (image source, pull policy, nodes, admin Secret, "
                               "exposure) is dropped")
            return yaml.safe_load((CHART / "values.yaml").read_text())
        if (REPO / name).is_file() and name.startswith("charts/ragfr/examples/"):
            return yaml.safe_load((REPO / name).read_text()) or {}
        self.problem(step, f"values file {name}: no earlier step says what it holds")
        return None

    def run(self) -> None:
        for rel in WALK_DOCS:
            self.wipes = []
            pods = len(self.restore_pods)
            for step in doc_steps(rel, self.root):
                if any(self.path.get(k) != v for k, v in step.choice.items()):
                    continue
                self.rendered.setdefault(rel, 0)
                if step.kind == "values":
                    if self.my_values is None:
                        self.problem(step, "keys for my-values.yaml before any step made it")
                        continue
                    data = self.copied(step, step.data)
                    if data is None:
                        continue
                    self.my_values = deep_merge(self.my_values, data)
                    self.edits += 1
                    self.note_mine(step)
                elif step.kind == "file":
                    self.files[step.text] = step.data
                elif step.kind == "pod":
                    self.derived_pod(step)
                else:
                    self.command(step)
            for step, pod, objects, replicas in self.restore_pods[pods:]:
                for p in restore_pod_problems(pod, objects, replicas, self.wipes):
                    self.problem(step, "the restore pod " + p)

    def scale(self, step: Step) -> None:
        """`kubectl scale deploy/NAME --replicas=N`; a placeholder (`<n>`) gives the workload back its own count."""
        argv = shlex.split(step.text)
        target = next(a for a in argv[2:] if "/" in a and not a.startswith("-"))
        count = next(a.split("=", 1)[1] for a in argv if a.startswith("--replicas="))
        name = target.split("/", 1)[1]
        if re.fullmatch(r"\d+", count):
            self.replicas[name] = int(count)
        else:
            self.replicas.pop(name, None)

    def restore_job(self, step: Step, assigns: dict[str, str]) -> None:
        """`make restore-job VALUES=… SET=…` run as the page says, with the files the walk has built so far; the
        Job it prints is the restore pod the page applies."""
        files = assigns.get("VALUES", "").split()
        if "my-values.yaml" not in files:
            self.problem(step, "make restore-job without VALUES=my-values.yaml: the Job is derived from another "
                               "release than the one the walk installed")
        with tempfile.TemporaryDirectory(prefix="walk-restore-") as tmp:
            paths = []
            for f in files:
                got = self.values_file(step, f)
                if got is None:
                    return
                paths.append(Path(tmp) / Path(f).name)
                paths[-1].write_text(yaml.safe_dump(got))
            env = {k: v for k, v in os.environ.items() if k not in ("KUBECONFIG", "MAKEFLAGS", "MAKELEVEL")}
            done = subprocess.run(["make", "-s", "-C", str(REPO), "restore-job",
                                   "VALUES=" + " ".join(map(str, paths)), f"SET={assigns.get('SET', '')}"],
                                  env=env, capture_output=True, text=True, timeout=120)
            merged: dict[str, Any] = {}
            for p in paths:
                merged = deep_merge(merged, yaml.safe_load(p.read_text()) or {})
        if done.returncode != 0:
            self.problem(step, "make restore-job fails: " + (done.stderr.strip().splitlines() or ["?"])[-1][:300])
            return
        job = yaml.safe_load(done.stdout)
        objects = Release(merged, render_operator(merged)).objects
        self.restore_pods.append((step, job["spec"]["template"]["spec"], objects, dict(self.replicas)))

    def derived_pod(self, step: Step) -> None:
        """The restore pod a page builds by hand from the backup CronJob's pod template (DERIVED_POD): restore.sh
        as the command, the env the page lists, the data volume writable if the page says so."""
        def backup_cronjob(release: Release) -> dict[str, Any] | None:
            return next((d for d in release.objects if d["kind"] == "CronJob" and
                         d["metadata"].get("labels", {}).get("app.kubernetes.io/component") == "backup"), None)

        if self.release is None or self.last is None:
            self.problem(step, "derives the restore pod from the backup CronJob of a release the walk never rendered")
            return
        release, cron = self.release, backup_cronjob(self.release)
        if cron is None:
            # Whoever restores a set took backups: the pod is checked as the same values with them would give it.
            self.problem(step, "derives the restore pod from the backup CronJob, which the release as last rendered "
                               "does not have (backup.enabled is false); the walk checks it with backup.enabled: true")
            values = deep_merge(self.last, {"backup": {"enabled": True}})
            release = Release(values, render_operator(values))
            cron = backup_cronjob(release)
            assert cron is not None, "backup.enabled: true renders no backup CronJob"
        pod = copy.deepcopy(cron["spec"]["jobTemplate"]["spec"]["template"]["spec"])
        data = openwebui_data_claims(release.objects)
        for c in pod.get("initContainers", []) + pod.get("containers", []):
            c["command"] = ["/bin/sh", "/ragfr-backup/restore.sh"]
            env = {e["name"]: e for e in c.get("env", [])}
            env.update({k: {"name": k, "value": v} for k, v in step.data["env"].items()})
            c["env"] = list(env.values())
            if step.data["writable"]:
                for m in c.get("volumeMounts", []):
                    if any(v["name"] == m["name"] and (v.get("persistentVolumeClaim") or {}).get("claimName") in data
                           for v in pod.get("volumes", [])):
                        m["readOnly"] = False
        if step.data["writable"]:
            for v in pod.get("volumes", []):
                if (v.get("persistentVolumeClaim") or {}).get("claimName") in data:
                    v["persistentVolumeClaim"]["readOnly"] = False
        self.restore_pods.append((step, pod, release.objects, dict(self.replicas)))

    def probe_migration(self, step: Step, values: dict[str, Any]) -> None:
        """The upgrade that adds a migration: rendered from the checkout as is and with migrations/9999 added,
        the migrations Job must change name, or `helm upgrade` keeps the completed Job and the new one never runs."""
        self.probed.append(step.where())
        try:
            before, after = migration_probe(self.checkout, values)
        except Exception as exc:
            self.problem(step, "the upgrade with one more migration does not render: "
                         + str(exc).strip().splitlines()[-1][:300])
            return
        if not before:
            self.problem(step, "renders no migrations Job: nothing applies the migrations the upgrade adds")
        elif before == after:
            self.problem(step, f"with one more migration (migrations/{PROBE}) the migrations Job is still "
                               f"{', '.join(before)}: `helm upgrade` keeps the completed Job and the new migration "
                               "never runs")

    def copied(self, step: Step, data: Any) -> Any:
        """The block's values, each `<key.path of file.yaml>` replaced by what that file holds there."""
        if isinstance(data, dict):
            out = {}
            for k, v in data.items():
                got = self.copied(step, v)
                if got is None and v is not None:
                    return None
                out[k] = got
            return out
        m = COPIED.match(data) if isinstance(data, str) else None
        if not m:
            return data
        held: Any = self.files.get(m.group(2))
        if held is None:
            self.problem(step, f"copies from {m.group(2)}, which no earlier step wrote")
            return None
        for part in m.group(1).split("."):
            held = held.get(part) if isinstance(held, dict) else None
        if held is None:
            self.problem(step, f"{m.group(2)} holds no {m.group(1)}")
        return held

    def note_mine(self, step: Step) -> None:
        """Record which settings my-values.yaml itself changed with this edit (a deliberate change, not a drop)."""
        if self.my_values is None:
            return
        try:
            now = applied_settings(Release(self.my_values, render_operator(self.my_values)))
        except Exception as exc:
            self.problem(step, "my-values.yaml as the walk built it does not render: "
                         + str(exc).strip().splitlines()[-1][:300])
            return
        for key, value in now.items():
            if key not in self.mine_settings or self.mine_settings[key][0] != value:
                self.mine_settings[key] = (value, self.edits)

    def keep_settings(self, step: Step, release: Release) -> None:
        """A setting applied earlier in the walk must still be in this command's render, unless my-values.yaml
        changed it since (then the new value is the one kept)."""
        for key, value in applied_settings(release).items():
            if key in self.kept:
                kept, where, edit = self.kept[key]
                mine, since = self.mine_settings.get(key, (None, -1))
                if value == kept:
                    self.kept_checks[key] = self.kept_checks.get(key, 0) + 1
                elif since > edit and value == mine:
                    self.kept[key] = (value, step.where(), self.edits)
                    self.models_moved(step, kept, value)
                else:
                    self.problem(step, f"{key}, applied at {where}, is dropped: this command renders {value!r:.160}"
                                       f" where it rendered {kept!r:.160}")
            elif value != chart_defaults()[key]:
                self.kept[key] = (value, step.where(), self.edits)
                self.models_moved(step, chart_defaults()[key], value)

    def models_moved(self, step: Step, before: Any, after: Any) -> None:
        """Ollama's models on a claim the chart keeps (resource-policy: keep): pointing Ollama at another claim
        leaves them on a volume no pod mounts, and Ollama on one nobody filled (issue 48: going air-gapped)."""
        if not isinstance(before, dict) or not isinstance(after, dict):
            return
        old, new = before.get("Ollama's models claim"), after.get("Ollama's models claim")
        if old is not None and new is not None and old != new:
            self.problem(step, f"Ollama's models volume changes from {old} to {new}: the models {old} holds are "
                               f"mounted by no pod any more, and Ollama starts on {new}, which no step of the walk "
                               "fills (keep the claim, or move its contents first)")

    def selector(self, step: Step) -> None:
        """`kubectl … -l SELECTOR` acts on the release as last rendered: the selector must match something."""
        argv = shlex.split(step.text.split(" | ")[0].split(" && ")[0])
        if self.release is None or "-l" not in argv:
            return
        sel = argv[argv.index("-l") + 1]
        words = [a for i, a in enumerate(argv[1:], 1) if not a.startswith("-") and argv[i - 1] not in ("-n", "-l")]
        kind = "Pod" if words[0] == "logs" else KUBECTL_KINDS.get(words[1]) if len(words) > 1 else None
        if kind is None:
            return
        if kind == "Pod":
            found = [labels for labels, _ in self.release.pods() if selector_matches(sel, labels)]
        else:
            found = [d for d in self.release.objects if d["kind"] == kind
                     and selector_matches(sel, d["metadata"].get("labels", {}))]
        if not found:
            self.problem(step, f"selects {kind} -l {sel}: the release as last rendered has none (a `kubectl wait` "
                               "times out, a `logs` or `get` finds nothing)")

    def command(self, step: Step) -> None:
        t = step.text
        if re.match(r"kubectl (-n \S+ )?scale ", t):
            self.scale(step)
            return
        if t.startswith("kubectl"):
            self.selector(step)
            return
        if t.startswith("rm -rf "):
            self.wipes.extend(shlex.split(t)[2:])
            return
        if t.startswith("ragfr gate calibrate"):
            # What it writes (src/ragfr/eval/gate_calibrate.py values_yaml; tests/cli/test_gate_calibrate.py):
            # the calibration document under openwebui.gate.calibration, for the release's embedding model.
            argv = shlex.split(t)
            out = argv[argv.index("--out") + 1] if "--out" in argv else "gate-values.yaml"
            doc = json.loads((REPO / "src" / "ragfr" / "gate" / "models"
                              / "local_multilingual-e5-small.json").read_text())
            model = ((self.my_values or {}).get("embedding") or {}).get("model", "bge-m3:567m")
            doc["embedding_model"] = f"ollama:{model}"
            self.files[out] = {"openwebui": {"gate": {"calibration": doc}}}
            return
        if t.startswith("cp "):
            src = shlex.split(t)[1]
            if self.my_values is not None:
                self.problem(step, "copies over my-values.yaml: every setting made in it before is lost")
            self.my_values = yaml.safe_load((REPO / src).read_text()) or {}
            self.note_mine(step)
            return
        if t.startswith("--set") or (not t.startswith(("helm", "make")) and "--reuse-values" in t):
            self.problem(step, "advises a --set / --reuse-values: the next `-f my-values.yaml` forgets it; "
                               "say which key to put in my-values.yaml")
            return
        argv = shlex.split(t)
        env = {}
        while re.fullmatch(r"[A-Z_]+=\S*", argv[0]):
            k, _, v = argv.pop(0).partition("=")
            env[k] = v
        if argv[0] == "make":
            assigns = dict(a.split("=", 1) for a in argv[2:] if "=" in a)
            assigns.update(env)
            if argv[1] == "restore-job":
                self.restore_job(step, assigns)
                return
            if argv[1] == "images-push" or (argv[1] == "run" and self.path.get("images") == "registry"):
                if self.path.get("images") == "registry" and assigns.get("IMAGES_TLS_VERIFY") != "false":
                    self.problem(step, "pushes to the walk's plain-HTTP registry without IMAGES_TLS_VERIFY=false: "
                                       "podman refuses (http: server gave HTTP response to HTTPS client)")
                if argv[1] == "images-push":
                    return
            files = assigns.get("VALUES", "").split()
            if not files:
                self.problem(step, f"make {argv[1]} without VALUES=my-values.yaml")
            self.install(step, files, [], reuse=False)
            return
        files, sets, reuse, i = [], [], False, 2
        while i < len(argv):
            a = argv[i]
            if a in ("-f", "--values"):
                files.append(argv[i + 1])
                i += 2
            elif a in ("--set", "--set-string"):
                sets.append(argv[i + 1])
                i += 2
            elif a in ("-n", "--namespace", "--timeout"):
                i += 2
            elif a == "--reuse-values":
                reuse = True
                i += 1
            else:
                i += 1
        self.install(step, files, sets, reuse)

    def install(self, step: Step, files: list[str], sets: list[str], reuse: bool) -> None:
        if any("<" in f or "…" in f for f in files):
            self.problem(step, f"values files {files}: a placeholder where the walk's `my-values.yaml` belongs")
            files = [f for f in files if "<" not in f and "…" not in f]
        if reuse:
            self.problem(step, "--reuse-values takes the release's stored values, not my-values.yaml")
        elif "my-values.yaml" not in files:
            self.problem(step, "does not use -f my-values.yaml")
        values: dict[str, Any] = copy.deepcopy(self.last or {}) if reuse else {}
        for f in files:
            got = self.values_file(step, f)
            if got is None:
                return
            values = deep_merge(values, got)
        for s in sets:
            for pair in s.split(","):
                key, _, value = pair.partition("=")
                set_path(values, key, scalar(value))
                held: Any = self.my_values or {}
                for part in key.split("."):
                    held = held.get(part) if isinstance(held, dict) else None
                if held != scalar(value):
                    self.problem(step, f"--set {key}={value}: my-values.yaml does not hold it, so the next "
                                       "`-f my-values.yaml` undoes it")
        try:
            release = Release(values, render_operator(values))
        except Exception as exc:  # the chart's refusal: one line of Helm's message
            self.problem(step, "the chart refuses these values: " + str(exc).strip().splitlines()[-1][:300])
            return
        self.last = values
        self.release = release
        self.rendered[step.doc] = self.rendered.get(step.doc, 0) + 1
        if step.doc == UPGRADE_PAGE and not self.probed:
            self.probe_migration(step, values)
        self.keep_settings(step, release)
        for p in exposure_problems(release):
            self.problem(step, p)
        if self.my_values is None:
            return
        try:
            mine = properties(Release(self.my_values, render_operator(self.my_values)))
        except Exception as exc:
            self.problem(step, "my-values.yaml as the walk built it does not render: "
                         + str(exc).strip().splitlines()[-1][:300])
            return
        got = properties(release)
        for key in sorted(set(mine) | set(got)):
            if mine.get(key) != got.get(key):
                self.problem(step, f"{key}: renders {got.get(key)!r}, my-values.yaml renders {mine.get(key)!r}: "
                                   "this step undoes what my-values.yaml holds, or sets what the next "
                                   "`-f my-values.yaml` drops")


def walk_report(path_name: str) -> DocWalk:
    w = DocWalk(PATHS[path_name])
    w.run()
    return w


def walk_problems(w: DocWalk) -> list[str]:
    """What the walk found, and what it should have met and did not."""
    problems = list(w.problems)
    # Not vacuous: the guide installs, and the pages of the second month render their commands.
    problems += [f"{rel}: no helm command of the walk rendered" for rel in SECOND_MONTH if not w.rendered.get(rel)]
    if not w.probed:
        problems.append(f"{UPGRADE_PAGE}: no upgrade the walk rendered again with one more migration")
    if not any(step.doc == RESTORE_PAGE for step, *_ in w.restore_pods):
        problems.append(f"{RESTORE_PAGE}: no restore pod the walk could check (`make restore-job VALUES=…`, or a "
                        "pod made from the backup CronJob's)")
    # Each setting of the second month is applied by some page, and a later command still renders it.
    for key in chart_defaults():
        if key not in w.kept:
            problems.append(f"{key}: no page of the walk applies it (set in my-values.yaml, then a helm command)")
        elif not w.kept_checks.get(key):
            problems.append(f"{key}: applied at {w.kept[key][1]}, and no later command of the walk renders it")
    return problems


@pytest.mark.parametrize("path_name", sorted(PATHS))
def test_the_documents_walked_in_order_keep_what_my_values_holds(path_name: str) -> None:
    problems = walk_problems(walk_report(path_name))
    assert not problems, f"walk [{path_name}]: {len(problems)} problem(s)\n" + "\n".join(problems)


# The examples docs/install.md adds to a k3s install reached through Traefik: combined, Traefik must still reach
# Open WebUI (examples/air-gapped.yaml once allowed only ingress-nginx: 504 behind Traefik).
ADDED_TO_THE_WALK = ("air-gapped", "backup-pvc", "backup-s3", "monitoring", "large-corpus", "reranker-cache",
                     "database-tls")


@pytest.mark.parametrize("example", ADDED_TO_THE_WALK)
def test_an_example_layered_after_lan_traefik_keeps_traefik_admitted(example: str) -> None:
    values: dict[str, Any] = {}
    for name in ("k3s-first-install", "lan-traefik", example):
        values = deep_merge(values, yaml.safe_load((CHART / "examples" / f"{name}.yaml").read_text()) or {})
    try:
        release = Release(values, render_operator(values))
    except Exception as exc:
        pytest.fail(f"{example} after lan-traefik does not render: {exc}")
    assert not exposure_problems(release), exposure_problems(release)


def test_the_cli_section_forwards_the_release_s_services() -> None:
    release = Release({}, render_raw(yaml.safe_load((CHART / "examples" / "k3s-first-install.yaml").read_text())))
    services = release.named("Service")
    secret_keys = secret_references(release)
    forwards = [c for c in walk() if c.text.startswith("kubectl -n ragfr port-forward ")]
    assert forwards
    for c in forwards:
        name, ports = c.argv()[4].removeprefix("svc/"), c.argv()[5].rstrip("&").strip()
        remote = int(ports.split(":")[1])
        assert name in services and remote in [p["port"] for p in services[name]["spec"]["ports"]], c.where()
    exports = " ".join(c.text for c in walk() if c.text.startswith("export "))
    m = re.search(r"get secret (\S+) -o jsonpath='\{\.data\.([\w-]+)\}'", exports)
    assert m and m.group(2) in secret_keys.get(m.group(1), set()), (exports, secret_keys)


def test_the_init_containers_counted_in_chart_upgrade_are_the_render_s() -> None:
    text = (REPO / "docs" / "runbooks" / "chart-upgrade.md").read_text()
    shown = {int(n) for n in re.findall(r"Init:0/(\d+)", text)}
    release = Release({}, render_raw(yaml.safe_load((CHART / "examples" / "k3s-first-install.yaml").read_text())))
    owui = next(spec for labels, spec in release.pods() if labels.get("app.kubernetes.io/component") == "openwebui")
    assert shown == {len(owui["initContainers"])}, (shown, [c["name"] for c in owui["initContainers"]])


# Each setting of the second month, and values that drop it while keeping the others (issue 48: the walk must
# fail where one is dropped, at that command).
DROPS = {"the gate's calibration (openwebui.gate.calibration)": {"openwebui": {"gate": {"calibration": None}}},
         "the backups (backup.*)": {"backup": {"enabled": False}},
         "the air-gapped switch (ollama.models.pull, the models' volume)": {"ollama": {"models": {"pull": True}}}}


def test_the_walk_names_the_command_that_drops_a_setting(tmp_path: Path) -> None:
    """The pages as they are, plus, at the end of the last page of the second month, one command per setting
    that renders my-values.yaml with that one setting undone: the walk reports exactly those commands."""
    for rel in WALK_DOCS:
        (tmp_path / rel).parent.mkdir(parents=True, exist_ok=True)
        shutil.copy(REPO / rel, tmp_path / rel)
    last = tmp_path / SECOND_MONTH[-1]
    added = []
    for n, (key, values) in enumerate(DROPS.items()):
        added.append((key, f"helm upgrade ragfr charts/ragfr -n ragfr -f my-values.yaml -f drop-{n}.yaml"))
        last.write_text(last.read_text(encoding="utf-8") + f"\n```yaml drop-{n}.yaml\n{yaml.safe_dump(values)}```\n\n"
                        f"```sh\n{added[-1][1]}\n```\n", encoding="utf-8")
    name = sorted(PATHS)[0]
    w = DocWalk(PATHS[name], tmp_path)
    w.run()
    assert all(key in w.kept for key in DROPS), sorted(w.kept)
    for key, command in added:
        at = [p for p in w.problems if command in p and "is dropped" in p]
        assert len(at) == 1 and at[0].split("-> ", 1)[1].startswith(key), (key, w.problems)
    assert len(w.problems) == len(added), w.problems


# The docs and chart the second month was first walked with (issue 48): what an operator following them met.
BEFORE = "c423653"
BEFORE_FOUND = {
    "gate-calibration.md: --reuse-values": r"^docs/runbooks/gate-calibration\.md:\d+: .*\n    -> --reuse-values ",
    "the calibration dropped by a later command": r"-> the gate's calibration \(openwebui\.gate\.calibration\), "
                                                  r"applied at .* is dropped",
    "going air-gapped moves the models claim": r"^docs/runbooks/air-gapped-install\.md:\d+: .*\n    -> Ollama's "
                                               r"models volume changes from \['ragfr-ollama-models'\]",
    "the pull Job waited for while air-gapped": r"^docs/runbooks/embedding-migration\.md:\d+: kubectl .*\n    -> "
                                                r"selects Job -l app\.kubernetes\.io/component=pull-models",
    "the backups never applied": r"^the backups \(backup\.\*\): no page of the walk applies it",
    "the upgrade keeps the migrations Job": r"^docs/runbooks/chart-upgrade\.md:\d+: .*\n    -> with one more "
                                            r"migration \(migrations/9999_walk_probe\.sql\) the migrations Job is "
                                            r"still ragfr-migrate-\w+: ",
    "the restore pod requires an Open WebUI pod": r"^docs/runbooks/restore\.md:\d+: .*\n    -> the restore pod "
                                                  r"requires \(podAffinity, kubernetes\.io/hostname\) a pod matching "
                                                  r".*'app\.kubernetes\.io/component': 'openwebui'.*ragfr-openwebui "
                                                  r"scaled to 0",
    "the restore wipes /data, not the data volume": r"^docs/runbooks/restore\.md:\d+: .*\n    -> the restore pod "
                                                    r"deletes under /data/\*, which no volume of the pod mounts",
}


SECOND_MONTH_PROBES = ("the upgrade keeps the migrations Job", "the restore pod requires an Open WebUI pod",
                       "the restore wipes /data, not the data volume")


def checkout_at(commit: str, into: Path, *paths: str) -> Path:
    """`paths` of `commit` extracted under `into` (git archive), or the test skipped where the history lacks it."""
    if subprocess.run(["git", "-C", str(REPO), "cat-file", "-e", f"{commit}^{{commit}}"],
                      capture_output=True).returncode != 0:
        pytest.skip(f"this checkout has no commit {commit} (a shallow clone or an exported tree)")
    archive = subprocess.run(["git", "-C", str(REPO), "archive", commit, *paths], capture_output=True, check=True)
    into.mkdir(parents=True, exist_ok=True)
    subprocess.run(["tar", "-x", "-C", str(into)], input=archive.stdout, check=True)
    return into


def test_the_walk_fails_on_the_docs_of_the_second_month_at_each_item(tmp_path: Path) -> None:
    """The pages and the chart of c423653, walked: each item of issue 48's second month is reported where an
    operator following them met it (the rest of the walk renders with today's chart)."""
    old = checkout_at(BEFORE, tmp_path, "docs", "charts/ragfr", "migrations", "patches")
    problems: dict[str, list[str]] = {}
    for name, path in PATHS.items():
        w = DocWalk(path, root=old, checkout=old)
        w.run()
        problems[name] = walk_problems(w)
    found = {item: [name for name, ps in problems.items() if any(re.search(pattern, p, re.M) for p in ps)]
             for item, pattern in BEFORE_FOUND.items()}
    # Every path meets the upgrade and the restore; the pull Job is waited for on the path that migrates in place.
    missing = [item for item, names in found.items()
               if not names or (item in SECOND_MONTH_PROBES and len(names) != len(PATHS))]
    assert not missing, f"not reported on the docs of {BEFORE}: {missing}\n" + "\n".join(
        f"[{name}] {p}" for name, ps in problems.items() for p in ps)


def test_each_check_of_the_second_month_fails_alone(tmp_path: Path) -> None:
    """Today's pages with only restore.md of c423653, and the upgrade probed with c423653's chart: the walk reports
    those two and nothing else (the migrations Job kept; the restore pod Pending, wiping the wrong path)."""
    old = checkout_at(BEFORE, tmp_path / "old", "charts/ragfr", "migrations", "patches", "docs/runbooks/restore.md")
    for rel in WALK_DOCS:
        (tmp_path / rel).parent.mkdir(parents=True, exist_ok=True)
        shutil.copy(old / rel if rel == RESTORE_PAGE else REPO / rel, tmp_path / rel)
    w = DocWalk(PATHS[sorted(PATHS)[0]], root=tmp_path, checkout=old)
    w.run()
    problems = walk_problems(w)
    alone = SECOND_MONTH_PROBES
    for item in alone:
        assert [p for p in problems if re.search(BEFORE_FOUND[item], p, re.M)], (item, problems)
    assert len(problems) == len(alone), problems


def test_the_restore_pod_checks_each_fail_on_a_pod_that_breaks_them() -> None:
    """walk_checks.restore_pod_problems on today's restore Job (it passes), then on that Job broken one way at a
    time: each check names what an operator would meet."""
    from ragfr_tools.restore_job import restore_job

    values = deep_merge(yaml.safe_load((CHART / "examples" / "k3s-first-install.yaml").read_text()),
                        {"backup": {"enabled": True}})
    objects = Release(values, render_operator(values)).objects
    stopped = {"ragfr-openwebui": 0}
    job = restore_job(objects, RELEASE, NAMESPACE, "20261201T023000Z")["spec"]["template"]["spec"]
    assert restore_pod_problems(job, objects, stopped, []) == []

    cron = next(d for d in objects if d["kind"] == "CronJob" and d["metadata"]["name"] == "ragfr-backup")
    beside = copy.deepcopy(job)
    beside["affinity"] = cron["spec"]["jobTemplate"]["spec"]["template"]["spec"]["affinity"]
    assert restore_pod_problems(beside, objects, {}, []) == []  # Open WebUI still runs: it schedules
    [pending] = restore_pod_problems(beside, objects, stopped, [])
    assert "requires (podAffinity" in pending and "ragfr-openwebui scaled to 0" in pending

    [wipe] = restore_pod_problems(job, objects, stopped, ["/data/*"])
    assert "deletes under /data/*, which no volume of the pod mounts" in wipe

    other = copy.deepcopy(job)
    next(v for v in other["volumes"] if v["name"] == "openwebui-data")["persistentVolumeClaim"]["claimName"] = "old"
    found = restore_pod_problems(other, objects, stopped, [])
    assert len(found) == 2 and "does not mount Open WebUI's data claim ['ragfr-openwebui-data']" in found[0] \
        and "on ['old'], not on Open WebUI's data claim" in found[1], found

    read_only = copy.deepcopy(job)
    for c in read_only["containers"]:
        for m in c["volumeMounts"]:
            m["readOnly"] = bool(m.get("readOnly")) or m["name"] == "openwebui-data"
    [ro] = restore_pod_problems(read_only, objects, stopped, [])
    assert "mounted read-only (openwebui-data)" in ro
