"""`make deploy` without a usable cluster, and `make run` on a cluster without an image source (issue 36), stop with
one clear line and apply nothing."""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import tempfile
from pathlib import Path

import pytest
import yaml
from tests.support.paths import REPO

KUBECONFIG_NOWHERE = """\
apiVersion: v1
kind: Config
clusters:
- name: nowhere
  cluster: {server: "https://127.0.0.1:1", insecure-skip-tls-verify: true}
users:
- name: u
  user: {token: not-a-secret}
contexts:
- name: nowhere
  context: {cluster: nowhere, user: u}
current-context: nowhere
"""

# k3s's kubeconfig (/etc/rancher/k3s/k3s.yaml) moved by RAGFR_K3S_KUBECONFIG: these tests must neither read a real
# k3s server's file on the machine they run on nor depend on one; a path that does not exist stands for "not a
# k3s server".
NO_K3S = Path("/nonexistent/rancher/k3s/k3s.yaml")


def deploy(tmp_path: Path, **env: str) -> subprocess.CompletedProcess[str]:
    base = {k: v for k, v in os.environ.items() if k != "KUBECONFIG"}
    # System dirs only: no helm binary there (Debian has none), so the helm-python-sdk path is the one tested.
    base.update(HOME=str(tmp_path), PATH="/usr/bin:/bin", ROOT=str(REPO), RAGFR_K3S_KUBECONFIG=str(NO_K3S))
    return subprocess.run(["bash", str(REPO / "scripts" / "deploy.sh")], env={**base, **env},
                          capture_output=True, text=True, timeout=60)


def test_no_kubeconfig_is_a_clear_refusal(tmp_path: Path) -> None:
    done = deploy(tmp_path)
    assert done.returncode == 2
    assert done.stderr.startswith("deploy: no Kubernetes cluster configured"), done.stderr


def test_unreachable_cluster_is_a_clear_refusal(tmp_path: Path) -> None:
    kubeconfig = tmp_path / "config"
    kubeconfig.write_text(KUBECONFIG_NOWHERE)
    done = deploy(tmp_path, KUBECONFIG=str(kubeconfig))
    assert done.returncode == 1
    (line,) = done.stderr.strip().splitlines()
    assert line.startswith("deploy: the cluster of the current kube context does not answer:"), line
    assert "127.0.0.1:1" in line


def test_missing_values_file_is_named(tmp_path: Path) -> None:
    done = deploy(tmp_path, VALUES="charts/ragfr/examples/nope.yaml")
    assert done.returncode == 2
    assert done.stderr.strip() == "deploy: values file not found: charts/ragfr/examples/nope.yaml"


def test_an_operators_helm_binary_is_used_instead_of_the_sdk(tmp_path: Path) -> None:
    # Issue 28: an operator with `helm` on PATH must not need the 244 MB helm-python-sdk. No helm binary can be
    # installed here (Debian 12 packages none, and get.helm.sh is out of reach), so a stand-in on PATH records
    # the command line it is given: what is tested is which helm deploy.sh runs, and with what.
    bindir = tmp_path / "bin"
    bindir.mkdir()
    record = tmp_path / "helm-argv"
    helm = bindir / "helm"
    helm.write_text(f'#!/bin/sh\nprintf "%s\\n" "$@" > {record}\n')
    helm.chmod(0o755)
    kubeconfig = tmp_path / "config"
    kubeconfig.write_text(KUBECONFIG_NOWHERE)
    done = deploy(tmp_path, KUBECONFIG=str(kubeconfig), PATH=f"{bindir}:/usr/bin:/bin", PY="/nonexistent/python",
                  VALUES="charts/ragfr/examples/gpu.yaml", KUBE_CONTEXT="lab")
    assert done.returncode == 0, done.stderr
    assert record.read_text().splitlines() == [
        "upgrade", "--install", "ragfr", str(REPO / "charts" / "ragfr"), "--namespace", "ragfr", "--create-namespace",
        "--wait", "--timeout", "1200s", "--kube-context", "lab", "-f", "charts/ragfr/examples/gpu.yaml"]


def make_run(tmp_path: Path, values: dict[str, object] | None, **env: str) -> subprocess.CompletedProcess[str]:
    """`make run VALUES=my-values.yaml` as an operator types it, against a cluster that does not answer."""
    kubeconfig = tmp_path / "config"
    kubeconfig.write_text(KUBECONFIG_NOWHERE)
    args = ["make", "--no-print-directory", "-C", str(REPO), "run"]
    if values is not None:
        my_values = tmp_path / "my-values.yaml"
        my_values.write_text(yaml.safe_dump(values))
        args.append(f"VALUES={my_values}")
    base = {k: v for k, v in os.environ.items() if k not in ("KUBECONFIG", "VALUES")}
    base.update(HOME=str(tmp_path), PATH="/usr/bin:/bin", KUBECONFIG=str(kubeconfig), RAGFR_K3S_KUBECONFIG=str(NO_K3S))
    return subprocess.run(args, env={**base, **env}, capture_output=True, text=True, timeout=300)


def run_lines(done: subprocess.CompletedProcess[str]) -> list[str]:
    return [line for line in done.stderr.splitlines() if not re.match(r"make(\[\d+\])?: \*\*\*", line)]


def test_make_run_without_an_image_source_stops_before_anything(tmp_path: Path) -> None:
    # Issue 36: the chart's defaults name no image the nodes can get; `make run` says the two ways and builds,
    # pushes and applies nothing (the cluster is never contacted: its refusal would be a `deploy:` line).
    for values in (None, {"openwebui": {"admin": {"existingSecret": "ragfr-admin"}}}):
        done = make_run(tmp_path, values)
        assert done.returncode != 0
        (line,) = run_lines(done)
        assert line.startswith("run: no image source in the values:"), line
        assert "global.imageRegistry: <host:port>" in line and "global.imageSource: imported" in line, line
        assert "nothing was built or applied" in line
        assert "make images" not in done.stdout and "deploy:" not in done.stdout + done.stderr


def test_make_run_registry_source_needs_the_registry(tmp_path: Path) -> None:
    done = make_run(tmp_path, {"global": {"imageSource": "registry"}})
    assert done.returncode != 0
    (line,) = run_lines(done)
    assert line == ("run: global.imageSource=registry needs global.imageRegistry: <host:port> of the registry to push "
                    "to; nothing was built or applied")


def test_make_run_to_a_cluster_that_does_not_answer_stops_before_building(tmp_path: Path) -> None:
    # Issue 48: the image decision first (the values are valid), then the cluster must answer before anything is
    # built, pushed, imported or applied: one line, exit 2, instead of minutes of building for nothing.
    for values in ({"global": {"imageSource": "imported"}}, {"global": {"imageRegistry": "127.0.0.1:1"}}):
        done = make_run(tmp_path, values)
        assert done.returncode != 0
        (line,) = run_lines(done)
        assert line.startswith("run: the cluster of the current kube context does not answer:"), line
        assert "127.0.0.1:1" in line and line.endswith("; nothing was built, pushed or applied"), line
        assert "run: images:" not in done.stdout and "make images" not in done.stdout
        assert re.search(r"make(\[\d+\])?: \*\*\* .* Error 2", done.stderr), done.stderr


# --- issue 48: `make run` on a k3s server node ---------------------------------------------------------------------

def helm_stand_in(tmp_path: Path) -> tuple[Path, Path]:
    """A `helm` on PATH that records the KUBECONFIG it was given (as in the test above: no helm binary here)."""
    bindir = tmp_path / "bin"
    bindir.mkdir(exist_ok=True)
    record = tmp_path / "helm-kubeconfig"
    helm = bindir / "helm"
    helm.write_text(f'#!/bin/sh\nprintf "%s" "${{KUBECONFIG:-unset}}" > {record}\n')
    helm.chmod(0o755)
    return bindir, record


def test_deploy_on_a_k3s_server_uses_k3s_s_kubeconfig(tmp_path: Path) -> None:
    # No KUBECONFIG, no ~/.kube/config: as `k3s kubectl` does, deploy.sh takes k3s's file, and exports it, so the
    # helm it runs talks to that cluster (helm alone would look at ~/.kube/config only).
    k3s = tmp_path / "etc-rancher-k3s" / "k3s.yaml"
    k3s.parent.mkdir()
    k3s.write_text(KUBECONFIG_NOWHERE)
    bindir, record = helm_stand_in(tmp_path)
    done = deploy(tmp_path, RAGFR_K3S_KUBECONFIG=str(k3s), PATH=f"{bindir}:/usr/bin:/bin")
    assert done.returncode == 0, done.stderr
    assert record.read_text() == str(k3s)
    # Without a helm binary, the SDK reads the same file: the cluster it names (127.0.0.1:1) is the one refused.
    done = deploy(tmp_path, RAGFR_K3S_KUBECONFIG=str(k3s))
    assert done.returncode == 1
    (line,) = done.stderr.strip().splitlines()
    assert line.startswith("deploy: the cluster of the current kube context does not answer:") and "127.0.0.1:1" in line


def test_a_users_kubeconfig_wins_over_k3s_s(tmp_path: Path) -> None:
    k3s = tmp_path / "k3s.yaml"
    k3s.write_text(KUBECONFIG_NOWHERE)
    (tmp_path / ".kube").mkdir()
    (tmp_path / ".kube" / "config").write_text(KUBECONFIG_NOWHERE)
    bindir, record = helm_stand_in(tmp_path)
    done = deploy(tmp_path, RAGFR_K3S_KUBECONFIG=str(k3s), PATH=f"{bindir}:/usr/bin:/bin")
    assert done.returncode == 0, done.stderr
    assert record.read_text() == "unset"  # kubectl's and helm's own default, ~/.kube/config, applies


def test_make_run_with_values_and_no_cluster_refuses_instead_of_starting_the_local_stack(tmp_path: Path) -> None:
    # Issue 48: on a k3s node whose kubeconfig run.sh did not find, `make run VALUES=my-values.yaml` said "no
    # Kubernetes cluster configured" and started the local stack, ignoring the values.
    done = make_run(tmp_path, {"global": {"imageSource": "imported"}}, KUBECONFIG="")
    assert done.returncode != 0
    (line,) = run_lines(done)
    assert line.startswith(f"run: VALUES={tmp_path / 'my-values.yaml'} is for a cluster, but no Kubernetes cluster "
                           "configured"), line
    assert "nothing was built, applied or started" in line
    assert "local stack (make up)" not in done.stdout and "make images" not in done.stdout
    assert re.search(r"make(\[\d+\])?: \*\*\* .* Error 2", done.stderr), done.stderr  # run.sh's exit status: 2


def test_make_run_on_a_k3s_server_deploys_with_k3s_s_kubeconfig(tmp_path: Path) -> None:
    # The same command on a k3s server node (its kubeconfig present): the deployment path, talking to the cluster
    # k3s's file names (here one that does not answer, so the run stops there, before building).
    k3s = tmp_path / "k3s.yaml"
    k3s.write_text(KUBECONFIG_NOWHERE)
    done = make_run(tmp_path, {"global": {"imageSource": "imported"}}, KUBECONFIG="", RAGFR_K3S_KUBECONFIG=str(k3s))
    assert done.returncode != 0
    assert "run: a Kubernetes context is configured: deploying charts/ragfr" in done.stdout
    (line,) = run_lines(done)
    assert line.startswith("run: the cluster of the current kube context does not answer:"), line
    assert "127.0.0.1:1" in line  # the server k3s's file names


@pytest.mark.skipif(os.geteuid() != 0 or shutil.which("setpriv") is None,
                    reason="needs root to make a root-only file and setpriv to run as another user")
def test_a_root_only_k3s_kubeconfig_is_named_to_a_user(tmp_path: Path) -> None:
    # k3s writes its kubeconfig for root only (mode 600): a user's `make deploy` on the server must say that,
    # not "no cluster configured". Run as nobody (setpriv), with the file where k3s puts it: a world-traversable
    # directory, the file itself root's and 600.
    etc = Path(tempfile.mkdtemp(prefix="ragfr-k3s-"))
    try:
        etc.chmod(0o755)
        k3s = etc / "k3s.yaml"
        k3s.write_text(KUBECONFIG_NOWHERE)
        k3s.chmod(0o600)
        home = etc / "home"
        home.mkdir(mode=0o755)
        env = {k: v for k, v in os.environ.items() if k != "KUBECONFIG"}
        env.update(HOME=str(home), PATH="/usr/bin:/bin", ROOT=str(REPO), RAGFR_K3S_KUBECONFIG=str(k3s))
        done = subprocess.run(["setpriv", "--reuid=65534", "--regid=65534", "--clear-groups", "bash",
                               str(REPO / "scripts" / "deploy.sh")], env=env, capture_output=True, text=True,
                              timeout=60)
        assert done.returncode == 2
        (line,) = done.stderr.strip().splitlines()
        assert line.startswith(f"deploy: no readable kubeconfig: this user may not read k3s's {k3s}"), line
        assert "sudo make" in line
    finally:
        shutil.rmtree(etc)
