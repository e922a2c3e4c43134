"""pgvector builds with other compiler flags, for negative controls and the flag-choice benchmark.

Each flavor is built by the same `images/ragdb/build-pgvector.sh` as the production build, from the same
verified source, into `.build/flavors/<name>-<key>/`, where key hashes every input (flags, scripts, lock, the
private PostgreSQL root's stamp) so a re-run reuses it. The result is a PostgreSQL root: a hard-linked copy of
`.build/pgroot` whose `vector.so` is replaced, so a cluster can run each flavor without touching the others.
"""

from __future__ import annotations

import hashlib
import os
import shutil
import subprocess
from dataclasses import dataclass
from pathlib import Path

from ragfr.errors import RagfrError
from ragfr_tools.repo import REPO

PG_LIB = Path("usr/lib/postgresql/15")


class BuildError(RagfrError):
    """A flavor could not be built (missing private PostgreSQL root, compiler failure)."""


@dataclass(frozen=True)
class Flavor:
    name: str
    optflags: str
    cppflags: str
    description: str


def cpu_has_avx512() -> bool:
    try:
        return " avx512f " in f" {Path('/proc/cpuinfo').read_text()} ".replace("\n", " ")
    except OSError:
        return False


def native_optflags() -> str:
    """The negative control's flags: upstream's default `-march=native` on a host with AVX-512 (the build host
    this project guards against), else an AVX-512 target named explicitly, so the control holds AVX-512 anywhere.

    `-march=cooperlake` alone is not enough: GCC's cooperlake tuning prefers 256-bit vectors, so the distance
    loops stay AVX2 (VEX) and a CPU without AVX-512 runs them. Measured with GCC 12 on a 2-core AMD EPYC host
    without AVX-512: 115 AVX-512 instructions in 30 functions, none in cosine_distance, l2_distance or
    inner_product; with `-mprefer-vector-width=512`, 293 in 48 functions, those three on zmm registers.
    """
    return "-march=native" if cpu_has_avx512() else "-march=cooperlake -mprefer-vector-width=512"


def flavors() -> dict[str, Flavor]:
    return {
        f.name: f
        for f in (
            Flavor("portable", "", "", "production: x86-64 baseline, runtime dispatch kept (CPUID-guarded)"),
            Flavor("nodispatch", "", "-DDISABLE_DISPATCH", "x86-64 baseline, runtime dispatch compiled out"),
            Flavor(
                "native", native_optflags(), "",
                "negative control: upstream default -march=native (an AVX-512 target on a host without it)",
            ),
        )
    }


@dataclass(frozen=True)
class FlavorBuild:
    flavor: Flavor
    root: Path

    @property
    def bindir(self) -> Path:
        return self.root / PG_LIB / "bin"

    @property
    def vector_so(self) -> Path:
        return self.root / PG_LIB / "lib" / "vector.so"


def repo_root() -> Path:
    return REPO


def _key(flavor: Flavor, root: Path, pgroot: Path) -> str:
    h = hashlib.sha256()
    h.update(f"{flavor.optflags}\0{flavor.cppflags}\0".encode())
    for rel in ("images/ragdb/pgvector.lock", "images/ragdb/build-pgvector.sh", "tools/ragfr_tools/build/flavors.py"):
        h.update((root / rel).read_bytes())
    h.update(" ".join(sorted(p.name for p in (root / ".build/stamps").glob("pgroot-*"))).encode())
    h.update(str(pgroot).encode())
    return h.hexdigest()[:12]


def build_flavor(name: str, *, root: Path | None = None, pgroot: Path | None = None) -> FlavorBuild:
    """Build (or reuse) flavor `name`; needs `make setup` to have built the private root first."""
    root = root or repo_root()
    pgroot = pgroot or Path(os.environ.get("RAGFR_PGROOT", root / ".build/pgroot"))
    known = flavors()
    if name not in known:
        raise BuildError(f"unknown flavor {name!r}; known: {', '.join(known)}")
    flavor = known[name]
    src = next((root / ".build/pgvector-src").glob("pgvector-*/Makefile"), None)
    if not (pgroot / PG_LIB / "bin/postgres").exists() or src is None:
        raise BuildError(f"no private PostgreSQL root at {pgroot}: run `make setup` first")
    out = root / ".build/flavors" / f"{name}-{_key(flavor, root, pgroot)}"
    build = FlavorBuild(flavor, out / "root")
    if (out / "done").exists():
        return build
    # Builds of this flavor from older inputs are dead weight (~15 MB each): drop them.
    for stale in out.parent.glob(f"{name}-*"):
        shutil.rmtree(stale, ignore_errors=True)
    out.mkdir(parents=True)
    cmd = [
        str(root / "images/ragdb/build-pgvector.sh"), "--src", str(src.parent), "--destdir", str(out / "install"),
        "--workdir", str(out / "work"), "--optflags", flavor.optflags, "--cppflags", flavor.cppflags, "--no-scan",
    ]
    proc = subprocess.run(cmd, capture_output=True, text=True, check=False)
    if proc.returncode != 0:
        raise BuildError(f"building flavor {name} failed: {proc.stderr.strip()[-500:]}")
    # Hard links keep the copy cheap; vector.so is unlinked before copying so the shared inode is untouched.
    shutil.copytree(pgroot, build.root, copy_function=os.link, symlinks=True)
    build.vector_so.unlink()
    shutil.copy2(out / "install" / PG_LIB / "lib/vector.so", build.vector_so)
    (out / "done").write_text(f"{flavor.optflags}\n{flavor.cppflags}\n")
    return build
