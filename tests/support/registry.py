"""A real OCI registry on loopback: Debian 12's docker-registry (distribution 2.8) with its own config and storage,
stopped afterwards. Plain HTTP on 127.0.0.1 (podman, skopeo and helm take it with their insecure switches)."""

from __future__ import annotations

import shutil
import socket
import subprocess
import time
import urllib.request
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


@contextmanager
def loopback_registry(folder: Path) -> Iterator[str]:
    """host:port of a registry storing under `folder`."""
    binary = shutil.which("docker-registry")
    assert binary, "docker-registry is not installed (make setup-apt installs it from bookworm)"
    port = free_port()
    config = folder / "registry.yml"
    config.write_text(
        "version: 0.1\nlog: {level: warn}\n"
        f"storage: {{filesystem: {{rootdirectory: {folder / 'registry-data'}}}}}\n"
        f"http: {{addr: 127.0.0.1:{port}}}\n")
    proc = subprocess.Popen([binary, "serve", str(config)], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    address = f"127.0.0.1:{port}"
    deadline = time.monotonic() + 180  # a hang guard, not a speed check
    try:
        while True:
            try:
                urllib.request.urlopen(f"http://{address}/v2/", timeout=2).close()
                break
            except OSError:
                assert proc.poll() is None, "docker-registry exited before answering"
                assert time.monotonic() < deadline, "docker-registry did not answer in 180 s"
                time.sleep(0.2)
        yield address
    finally:
        proc.terminate()
        proc.wait(timeout=10)
