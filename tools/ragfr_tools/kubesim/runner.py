"""Runs pods translated by `pods` with podman, in the order the caller asks, and removes all it created.

Every object is named `<prefix>-...` so that a shared machine's other containers, pods and volumes are never
touched: teardown removes exactly the names recorded here.
"""

from __future__ import annotations

import dataclasses
import json
import os
import shutil
import subprocess
import sys
import time
import urllib.request
from collections import Counter
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ragfr_tools.kubesim import pods as kp

PODMAN = ("podman", "--runtime", "runc", "--cgroup-manager", "cgroupfs", "--events-backend", "file")
LOG_LINES = 15


class SmokeFailure(RuntimeError):
    """A stage failed; the message names the workload, the container and its last log lines."""


@dataclass
class Stage:
    name: str
    seconds: float


@dataclass
class Cluster:
    """The rendered chart's objects, and the podman objects made from them so far."""

    manifests: Sequence[kp.Manifest]
    prefix: str
    workdir: Path
    image_map: Mapping[str, str] = field(default_factory=dict)
    env: Mapping[str, str] | None = None
    hosts: dict[str, str] = field(default_factory=dict)  # Service name -> pod IP
    ips: dict[str, str] = field(default_factory=dict)  # pod name -> IP
    pods: list[str] = field(default_factory=list)
    volumes: list[str] = field(default_factory=list)
    stages: list[Stage] = field(default_factory=list)
    last_logs: str = ""  # output of the last container run to completion
    prepared: dict[str, tuple[str, dict[str, str], dict[str, str]]] = field(default_factory=dict)

    def __post_init__(self) -> None:
        self.objects = kp.index(self.manifests)
        # A pod's infra container gets podman's default rlimits, which this machine's hard limits refuse;
        # only containers.conf sets them (ENGINEERING-NOTES).
        self.workdir.mkdir(parents=True, exist_ok=True)
        conf = self.workdir / "containers.conf"
        conf.write_text('[containers]\ndefault_ulimits = ["nofile=20000:20000", "nproc=4096:4096"]\n')
        self.env = {**os.environ, **(self.env or {}), "CONTAINERS_CONF": str(conf)}

    # -- podman ---------------------------------------------------------------------------------------------
    def podman(self, *args: str, check: bool = True, timeout: float = 600) -> subprocess.CompletedProcess[str]:
        done = subprocess.run([*PODMAN, *args], capture_output=True, text=True, timeout=timeout, env=self.env)
        if check and done.returncode != 0:
            raise SmokeFailure(f"podman {' '.join(args[:3])} ...: {done.stderr.strip()[-400:]}")
        return done

    def logs(self, container: str) -> str:
        out = self.podman("logs", container, check=False)
        lines = (out.stdout + out.stderr).strip().splitlines()
        return "\n".join(f"    {line}" for line in lines[-LOG_LINES:]) or "    (no output)"

    def full_logs(self, pod: kp.Pod, container: str) -> str:
        """Everything a running container of `pod` has printed so far (stdout and stderr)."""
        out = self.podman("logs", f"{self.prepared[pod.name][0]}-{container}", check=False)
        return out.stdout + out.stderr

    def image(self, reference: str) -> str:
        image = self.image_map.get(reference, reference)
        if self.podman("image", "exists", image, check=False).returncode != 0:
            raise SmokeFailure(f"image {image} (rendered as {reference}) is not in local storage: `make images` "
                               f"builds ragfr/ragdb, ragfr/ragfr and ragfr/owui-init with the chart's appVersion")
        return image

    # -- one pod --------------------------------------------------------------------------------------------
    def workload(self, kind: str, name: str) -> kp.Pod:
        obj = self.objects.get((kind, name))
        if obj is None:
            raise SmokeFailure(f"{kind}/{name} is not in the rendered chart")
        return kp.pod_of(obj, self.objects)

    def _prepare_volumes(self, pod: kp.Pod, pod_dir: Path) -> tuple[dict[str, str], dict[str, str]]:
        paths: dict[str, str] = {}
        claims: dict[str, str] = {}
        mounted_by = Counter(m.volume for c in pod.init_containers + pod.containers for m in c.mounts)
        for vol in pod.volumes.values():
            if vol.kind == "persistentVolumeClaim":
                claims[vol.ref] = self._claim(vol.ref, pod.fs_group)
            elif vol.kind == "emptyDir" and vol.memory and mounted_by[vol.name] < 2:
                continue  # a tmpfs in its one container (pods.run_args); shared ones need a directory
            else:
                d = pod_dir / vol.name
                d.mkdir(parents=True)
                if vol.kind == "emptyDir":
                    d.chmod(0o777)
                for key, text in vol.files.items():
                    (d / key).write_text(text)
                    (d / key).chmod(vol.mode)
                    if pod.fs_group is not None:
                        # As the kubelet: files of a secret/configMap volume belong to root and the fsGroup.
                        os.chown(d / key, 0, pod.fs_group)
                if vol.kind != "emptyDir":
                    d.chmod(0o755)
                paths[vol.name] = str(d)
        return paths, claims

    def _claim(self, claim: str, fs_group: int | None) -> str:
        name = f"{self.prefix}-pvc-{claim}"
        if name not in self.volumes:
            self.podman("volume", "create", name)
            self.volumes.append(name)
            mountpoint = self.podman("volume", "inspect", "--format", "{{.Mountpoint}}", name).stdout.strip()
            if fs_group is not None:
                os.chown(mountpoint, 0, fs_group)
                os.chmod(mountpoint, 0o2775)
        return name

    def start(self, pod: kp.Pod, *, wait_ready: float = 300, run_to_completion: bool = False,
              init_only: bool = False) -> str:
        """Creates the pod, runs its init containers one by one, then its containers; returns the pod IP.

        run_to_completion: a Job's or a test hook's pod (containers in the foreground, exit status checked).
        init_only: stop after the init containers (run_containers goes on), so a check can run in between.
        """
        started = time.monotonic()
        pod_name = f"{self.prefix}-{pod.name}"
        pod_dir = self.workdir / pod.name
        if pod_dir.exists():
            shutil.rmtree(pod_dir)
        pod_dir.mkdir(parents=True)
        paths, claims = self._prepare_volumes(pod, pod_dir)
        self.prepared[pod.name] = (pod_name, paths, claims)
        create = ["pod", "create", "--name", pod_name, "--hostname", pod.name]
        for host, ip in sorted(self.hosts.items()):
            create += ["--add-host", f"{host}:{ip}"]
        self.podman(*create)
        self.pods.append(pod_name)
        self.podman("pod", "start", pod_name)
        self.ips[pod.name] = ip = self._pod_ip(pod_name)
        for c in pod.init_containers:
            self._run(pod, c, pod_name, paths, claims, detach=False, what="init container")
        if init_only:
            names = ", ".join(c.name for c in pod.init_containers)
            self.stages.append(Stage(f"{pod.workload} (init containers {names})", time.monotonic() - started))
            return ip
        self.run_containers(pod, wait_ready=wait_ready, run_to_completion=run_to_completion, started=started)
        return ip

    def run_containers(self, pod: kp.Pod, *, wait_ready: float = 300, run_to_completion: bool = False,
                       started: float | None = None, until_ready: bool = True) -> None:
        """The pod's containers, in a pod `start` made; until every probe passes (or each exits 0).

        until_ready=False: until the startup probes pass only; the pod is not Ready, so no Service reaches it
        until wait_ready."""
        first = started is None
        started = time.monotonic() if started is None else started
        pod_name, paths, claims = self.prepared[pod.name]
        for c in pod.containers:
            self._run(pod, c, pod_name, paths, claims, detach=not run_to_completion, what="container")
        if not run_to_completion:
            for c in pod.containers:
                self._wait_ready(pod, c, pod_name, self.ips[pod.name], wait_ready, readiness=until_ready)
            if not until_ready:
                self.stages.append(Stage(f"{pod.workload} (containers {', '.join(c.name for c in pod.containers)}, "
                                         "started, not ready)", time.monotonic() - started))
                return
            self._serve(pod)
        suffix = f" (containers {', '.join(c.name for c in pod.containers)}, ready)" if first else ""
        self.stages.append(Stage(pod.workload + suffix, time.monotonic() - started))

    def _serve(self, pod: kp.Pod) -> None:
        """A Ready pod joins the Services selecting it."""
        for service in kp.service_targets(self.objects, pod):
            self.hosts[service] = self.ips[pod.name]

    def wait_ready(self, pod: kp.Pod, timeout: float) -> None:
        """Polls the readiness probes of a pod run with until_ready=False until they pass; then it serves."""
        started = time.monotonic()
        pod_name = self.prepared[pod.name][0]
        for c in pod.containers:
            self._wait_ready(pod, c, pod_name, self.ips[pod.name], timeout, startup=False)
        self._serve(pod)
        self.stages.append(Stage(f"{pod.workload} (ready)", time.monotonic() - started))

    def readiness(self, pod: kp.Pod, container: str) -> tuple[bool, str]:
        """One run of a container's exec readiness probe, as the kubelet runs it: (passed, its output)."""
        [c] = [c for c in pod.containers if c.name == container]
        probe = c.readiness_probe or {}
        if "exec" not in probe:
            raise SmokeFailure(f"{pod.workload}: container {container} has no exec readiness probe")
        done = self.podman("exec", f"{self.prepared[pod.name][0]}-{container}", *probe["exec"]["command"],
                           check=False, timeout=60)
        return done.returncode == 0, (done.stdout + done.stderr).strip()

    def exec_input(self, pod: kp.Pod, container: str, command: Sequence[str], data: bytes) -> str:
        """`kubectl exec -i <pod> -c <container> -- <command>` with `data` on its stdin (as the container's user);
        returns its output, raises when it fails."""
        name = f"{self.prepared[pod.name][0]}-{container}"
        done = subprocess.run([*PODMAN, "exec", "-i", name, *command], input=data, capture_output=True,
                              timeout=300, env=self.env)
        out = (done.stdout + done.stderr).decode(errors="replace").strip()
        if done.returncode != 0:
            raise SmokeFailure(f"{pod.workload}: `{' '.join(command)}` in container {container} failed "
                               f"(exit {done.returncode}): {out[-600:]}")
        return out

    def upgrade(self, manifests: Sequence[kp.Manifest], image_map: Mapping[str, str]) -> None:
        """`helm upgrade` to another render: the pods started from now on are the new objects' (on `image_map`'s
        images); the claims (podman volumes) stay, as a release's PVCs do. Delete the old pods first."""
        self.manifests = manifests
        self.objects = kp.index(manifests)
        self.image_map = image_map

    def delete(self, pod: kp.Pod) -> None:
        """Removes a pod run before, as helm's hook-delete-policy before-hook-creation does before a new run."""
        pod_name = self.prepared.pop(pod.name)[0]
        self._remove("pod", pod_name, ["pod", "rm", "--force", "--time", "5", pod_name])
        self.pods.remove(pod_name)

    def check_in_pod(self, pod: kp.Pod, container: str, command: Sequence[str], *, what: str) -> None:
        """Runs `command` instead of a container's own process, with everything else of that container (image,
        env, mounts, user, security context), in its already started pod; a failure raises with its output."""
        started = time.monotonic()
        pod_name, paths, claims = self.prepared[pod.name]
        [spec] = [c for c in pod.containers if c.name == container]
        check = dataclasses.replace(spec, name=f"{spec.name}-check", command=tuple(command), args=None)
        self._run(pod, check, pod_name, paths, claims, detach=False, what="container",
                  label=f"container {container} ({what})")
        self.stages.append(Stage(f"{pod.workload} container {container} ({what})", time.monotonic() - started))

    def _pod_ip(self, pod_name: str) -> str:
        infra = self.podman("pod", "inspect", "--format", "{{.InfraContainerID}}", pod_name).stdout.strip()
        return self.podman("inspect", "--format", "{{.NetworkSettings.IPAddress}}", infra).stdout.strip()

    def _run(self, pod: kp.Pod, c: kp.Container, pod_name: str, paths: Mapping[str, str],
             claims: Mapping[str, str], *, detach: bool, what: str, label: str = "") -> None:
        name = f"{pod_name}-{c.name}"
        argv = kp.run_args(c, pod_name=pod_name, container_name=name, image=self.image(c.image),
                           volume_paths=paths, claim_volumes=claims, volumes=pod.volumes, detach=detach)
        done = self.podman("run", *argv, check=False, timeout=1800)
        if not detach:
            self.last_logs = self.logs(name)
        if done.returncode != 0:
            detail = self.last_logs if not detach else ""
            if not detail.strip() or detail.strip() == "(no output)":
                # Nothing logged: the runtime's own error (e.g. the command is not in the image) is the cause.
                detail = "    " + (done.stderr.strip().splitlines() or ["(no output)"])[-1]
            raise SmokeFailure(f"{pod.workload}: {label or f'{what} {c.name}'} failed (exit {done.returncode}); "
                               "last lines:\n"
                               f"{detail}")

    def _wait_ready(self, pod: kp.Pod, c: kp.Container, pod_name: str, ip: str, timeout: float, *,
                    startup: bool = True, readiness: bool = True) -> None:
        name = f"{pod_name}-{c.name}"
        deadline = time.monotonic() + timeout
        probes = ([c.startup_probe] if startup else []) + ([c.readiness_probe] if readiness else [])
        for p in [x for x in probes if x]:
            while not self._probe(p, c, name, ip):
                state = self.podman("inspect", "--format", "{{.State.Status}} {{.State.ExitCode}}", name).stdout
                if not state.startswith("running"):
                    raise SmokeFailure(f"{pod.workload}: container {c.name} stopped ({state.strip()}); last lines:\n"
                                       f"{self.logs(name)}")
                if time.monotonic() > deadline:
                    raise SmokeFailure(f"{pod.workload}: container {c.name} not ready after {timeout:.0f} s; "
                                       f"last lines:\n{self.logs(name)}")
                time.sleep(1)

    def _probe(self, probe: Mapping[str, Any], c: kp.Container, name: str, ip: str) -> bool:
        if "exec" in probe:
            return self.podman("exec", name, *probe["exec"]["command"], check=False, timeout=60).returncode == 0
        if "httpGet" in probe:
            get = probe["httpGet"]
            port = get["port"] if isinstance(get["port"], int) else c.ports[str(get["port"])]
            try:
                with urllib.request.urlopen(f"http://{ip}:{port}{get.get('path', '/')}", timeout=5) as r:
                    return 200 <= r.status < 400
            except OSError:
                return False
        raise SmokeFailure(f"unsupported probe {json.dumps(probe)}")

    # -- end ------------------------------------------------------------------------------------------------
    def _remove(self, kind: str, name: str, command: list[str], timeout: float = 120) -> None:
        """`podman <kind> rm` until the object is gone: on a busy machine a removal can fail while one of the
        pod's containers is still stopping (the CI rehearsal of stop 31 left an Open WebUI pod behind)."""
        deadline = time.monotonic() + timeout
        while True:
            done = self.podman(*command, check=False)
            if self.podman(kind, "exists", name, check=False).returncode != 0:
                return
            if time.monotonic() > deadline:
                # Not raised: teardown runs in `finally`, and the smoke's own failure must stay the one reported.
                # The tests check that nothing with their prefix is left, and name what is.
                print(f"kubesim: podman could not remove {kind} {name}: {done.stderr.strip()[-300:]}", file=sys.stderr)
                return
            time.sleep(1)

    def teardown(self) -> None:
        """Removes the pods (and their containers) and volumes this cluster created, newest first."""
        for pod in reversed(self.pods):
            self._remove("pod", pod, ["pod", "rm", "--force", "--time", "5", pod])
        for vol in reversed(self.volumes):
            self._remove("volume", vol, ["volume", "rm", "--force", vol])
        self.pods.clear()
        self.volumes.clear()
        shutil.rmtree(self.workdir, ignore_errors=True)
