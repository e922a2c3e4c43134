"""The late setup of `make test`: what scripts/test.sh builds while the compute and index lanes already run.

scripts/test.sh starts the compute and index lanes right after `make setup` and builds meanwhile, in the
background, the Open WebUI venv (.venv-owui), the S3 double (.venv-s3double) and the podman images (ragfr/ragdb,
ragfr/ragfr, ragfr/owui-init; scripts/images.sh build also writes .build/image-context and
.build/owui-init-context). It exports RAGFR_LATE_SETUP=<prefix> to those two lanes only, and writes <prefix>.ok
when the late setup succeeded, or <prefix>.failed holding the path of its log. The session fixture `late_setup`
(tests/conftest.py) is this wait; exactly the tests that use one of those things request it, and tests/conftest.py
runs them last when RAGFR_LATE_SETUP is set, so that in a normal run the late setup is long done when they start
and nothing waits.

Without RAGFR_LATE_SETUP (pytest by hand on a machine set up before, `scripts/test.sh PATH`, which sets up
everything first, or the Open WebUI and image lanes, which start when what they use is built) there is nothing to
wait for.
"""

from __future__ import annotations

import functools
import os
import time
from pathlib import Path

import pytest

ENV = "RAGFR_LATE_SETUP"
# The process that writes the verdict (scripts/test.sh): if it is gone without one, no verdict will ever come.
WRITER_ENV = "RAGFR_LATE_SETUP_WRITER"
# How often the verdict files are looked at. There is no deadline: the late setup ends with a verdict, or its
# writer dies (checked here too); pytest-timeout's per-test guard is the last resort.
POLL_SECONDS = 2.0


def _alive(pid: int) -> bool:
    """True while `pid` runs; a zombie (state Z) has ended."""
    try:
        state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except (OSError, IndexError):
        return False
    return state not in ("Z", "X")


def _failed(verdict: Path) -> None:
    log = Path(verdict.read_text().strip() or str(verdict))
    text = log.read_text(errors="replace") if log.is_file() else f"(no log at {log})"
    pytest.fail(f"the late setup of `make test` failed ({log}); its end:\n{text[-4000:]}", pytrace=False)


@functools.cache
def _waited(prefix: str) -> float:
    ok, failed = Path(prefix + ".ok"), Path(prefix + ".failed")
    writer = int(os.environ.get(WRITER_ENV) or 0)
    start = time.monotonic()
    while not ok.exists():
        if failed.exists():
            _failed(failed)  # raises; not cached, so every test that needs the late setup fails with its log
        if writer and not _alive(writer) and not (ok.exists() or failed.exists()):
            pytest.fail(f"scripts/test.sh (pid {writer}) ended before the late setup's verdict ({prefix}.ok or "
                        ".failed)", pytrace=False)
        time.sleep(POLL_SECONDS)
    waited = time.monotonic() - start
    # test.sh prints this at the end: how long a lane stood still for the late setup (0 when ordered well).
    with Path(prefix + ".waited").open("a") as out:
        out.write(f"{waited:.1f}\n")
    return waited


def active() -> bool:
    """True in the compute and index lanes of `make test`, where the late setup may still run."""
    return bool(os.environ.get(ENV))


def last(items: list[pytest.Item]) -> list[pytest.Item]:
    """`items` with those that request `late_setup` (directly or through a fixture) moved to the end, each group
    in its order: they then find the late setup done instead of holding the lane while it runs."""
    late = [item for item in items if "late_setup" in getattr(item, "fixturenames", ())]
    moved = {id(item) for item in late}
    return [item for item in items if id(item) not in moved] + late


def wait() -> None:
    """Returns once the late setup has succeeded (at once without the protocol); fails with its log otherwise."""
    prefix = os.environ.get(ENV)
    if prefix:
        _waited(prefix)
