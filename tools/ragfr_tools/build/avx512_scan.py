"""Find AVX-512 instructions in a compiled object, per function, from `objdump -d -w` output.

A build host with AVX-512 (and pgvector's upstream default `-march=native`) puts EVEX-encoded instructions in
ordinary functions; the shared library then dies with SIGILL on CPUs without AVX-512. Only functions that are
reached after a CPUID check may contain them: those are listed in an allowlist.

What counts as AVX-512 here:
- EVEX-encoded instructions: in 64-bit mode the byte 0x62 as the first opcode byte (after legacy prefixes)
  is always EVEX, because BOUND, its 32-bit meaning, does not exist in 64-bit mode;
- instructions that name an opmask register k0-k7 (as an operand or as a `{%kN}` write mask): the k-register
  instructions themselves (kmovw, kortestw, ...) are VEX-encoded, so the EVEX test alone would miss them;
- zmm registers are counted too (they only occur in EVEX instructions, so they never add to the total).

Stdlib only: the image's builder stage runs this file with the distribution's python3, without the package.

    python -m ragfr_tools.build.avx512_scan --allowlist images/ragdb/avx512-allowlist.txt vector.so
"""

from __future__ import annotations

import argparse
import json
import re
import shutil
import subprocess
import sys
from collections.abc import Iterable
from dataclasses import asdict, dataclass, field
from pathlib import Path

# `0000000000001234 <name>:` opens a function's listing.
_FUNC_RE = re.compile(r"^[0-9a-fA-F]+ <(?P<name>[^>]+)>:\s*$")
# `    1234:\t62 f1 7c 48 10 04 07 \tvmovups (%rdi),%zmm0` -- the bytes column, then the instruction.
_INSN_RE = re.compile(r"^\s*[0-9a-fA-F]+:\t(?P<bytes>(?:[0-9a-fA-F]{2} )+)\s*\t?(?P<text>.*)$")
_ZMM_RE = re.compile(r"%zmm\d+\b")
_KREG_RE = re.compile(r"%k[0-7]\b")
# Legacy prefixes that may precede an EVEX instruction (operand/address size, rep, segment overrides).
_LEGACY_PREFIXES = frozenset({0x66, 0x67, 0xF2, 0xF3, 0x2E, 0x36, 0x3E, 0x26, 0x64, 0x65, 0xF0})
_EVEX = 0x62


@dataclass
class FunctionCounts:
    """AVX-512 usage of one function (a symbol in the disassembly)."""

    name: str
    avx512: int = 0
    evex: int = 0
    zmm: int = 0
    kmask: int = 0
    examples: list[str] = field(default_factory=list)


@dataclass
class ScanReport:
    """Result for one object file: every function that holds AVX-512, split by the allowlist."""

    path: str
    functions: list[FunctionCounts]
    allowed: list[str]
    offending: list[str]

    @property
    def total(self) -> int:
        return sum(f.avx512 for f in self.functions)

    def count(self, attr: str) -> int:
        return sum(int(getattr(f, attr)) for f in self.functions)

    def summary(self) -> str:
        return (
            f"{self.path}: {self.total} AVX-512 instructions ({self.count('evex')} EVEX, "
            f"{self.count('zmm')} with zmm, {self.count('kmask')} with k-mask) "
            f"in {len(self.functions)} functions; "
            f"{len(self.allowed)} allowlisted, {len(self.offending)} offending"
        )


class ScanError(Exception):
    """The object could not be disassembled or an input file is unreadable."""


def is_evex(raw: bytes) -> bool:
    """True when the instruction's first byte after legacy prefixes is the EVEX escape 0x62."""
    for byte in raw:
        if byte in _LEGACY_PREFIXES:
            continue
        return byte == _EVEX
    return False


def parse_objdump(text: Iterable[str]) -> list[FunctionCounts]:
    """Per-function AVX-512 counts from `objdump -d -w` text; functions without any are left out.

    objdump without `-w` wraps long instructions' bytes onto continuation lines with no mnemonic; those are
    skipped, which is why `-w` is required for exact counts.
    """
    counts: dict[str, FunctionCounts] = {}
    current = "<no symbol>"
    for line in text:
        line = line.rstrip("\n")
        m = _FUNC_RE.match(line)
        if m:
            current = m.group("name")
            continue
        mi = _INSN_RE.match(line)
        if not mi or not mi.group("text").strip():
            continue
        raw = bytes.fromhex(mi.group("bytes").replace(" ", ""))
        insn = mi.group("text")
        evex = is_evex(raw)
        zmm = bool(_ZMM_RE.search(insn))
        kmask = bool(_KREG_RE.search(insn))
        if not (evex or zmm or kmask):
            continue
        fc = counts.setdefault(current, FunctionCounts(current))
        fc.avx512 += 1
        fc.evex += evex
        fc.zmm += zmm
        fc.kmask += kmask
        if len(fc.examples) < 3:
            fc.examples.append(insn.strip())
    return sorted(counts.values(), key=lambda f: (-f.avx512, f.name))


def load_allowlist(path: Path | None) -> set[str]:
    """Function names, one per line; `#` starts a comment. None or /dev/null means nothing is allowed."""
    if path is None:
        return set()
    try:
        lines = path.read_text(encoding="utf-8").splitlines()
    except OSError as exc:
        raise ScanError(f"cannot read allowlist {path}: {exc.strerror}") from exc
    return {ln.split("#", 1)[0].strip() for ln in lines} - {""}


def is_allowed(function: str, allowlist: set[str]) -> bool:
    """An allowlisted name also covers the compiler's split-off parts of it (`name.cold`, `name.part.0`)."""
    base = function.split("@", 1)[0]
    return any(base == a or base.startswith(a + ".") for a in allowlist)


def classify(path: str, functions: list[FunctionCounts], allowlist: set[str]) -> ScanReport:
    allowed = [f.name for f in functions if is_allowed(f.name, allowlist)]
    offending = [f.name for f in functions if not is_allowed(f.name, allowlist)]
    return ScanReport(path=path, functions=functions, allowed=allowed, offending=offending)


def disassemble(obj: Path, objdump: str = "objdump") -> str:
    exe = shutil.which(objdump)
    if exe is None:
        raise ScanError(f"{objdump} not found (install binutils)")
    if not obj.is_file():
        raise ScanError(f"no such file: {obj}")
    proc = subprocess.run([exe, "-d", "-w", str(obj)], capture_output=True, text=True, check=False)
    if proc.returncode != 0:
        raise ScanError(f"objdump failed on {obj}: {proc.stderr.strip().splitlines()[-1:]}")
    return proc.stdout


def scan_file(obj: Path, allowlist: set[str], objdump: str = "objdump") -> ScanReport:
    return classify(str(obj), parse_objdump(disassemble(obj, objdump).splitlines()), allowlist)


def _build_parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(
        prog="python -m ragfr_tools.build.avx512_scan",
        description=(
            "Count AVX-512 instructions (EVEX-encoded, zmm, k-mask registers) per function in compiled "
            "objects and fail if any function outside the allowlist has them. Exit 0: clean; "
            "1: offending functions (listed on stderr); 2: bad input or objdump failure."
        ),
        epilog=(
            "Examples:\n"
            "  python -m ragfr_tools.build.avx512_scan --allowlist images/ragdb/avx512-allowlist.txt vector.so\n"
            "  python -m ragfr_tools.build.avx512_scan --verbose vector.so   # no allowlist: any AVX-512 fails\n"
            "  objdump -d -w vector.so | python -m ragfr_tools.build.avx512_scan --objdump-text -"
        ),
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    p.add_argument(
        "files", nargs="+",
        help="shared objects/executables to scan (objdump text files with --objdump-text; - for stdin)",
    )
    p.add_argument(
        "--allowlist", type=Path, help="file of function names allowed to hold AVX-512 (CPUID-guarded)"
    )
    p.add_argument("--objdump", default="objdump", help="objdump executable (default: objdump)")
    p.add_argument(
        "--objdump-text", action="store_true", help="inputs are saved `objdump -d -w` output, not binaries"
    )
    p.add_argument("--verbose", "-v", action="store_true", help="list every function that holds AVX-512")
    p.add_argument("--json", action="store_true", help="print the reports as JSON on stdout")
    return p


def _read_text(name: str) -> list[str]:
    if name == "-":
        return sys.stdin.read().splitlines()
    try:
        return Path(name).read_text(encoding="utf-8", errors="replace").splitlines()
    except OSError as exc:
        raise ScanError(f"cannot read {name}: {exc.strerror}") from exc


def main(argv: list[str] | None = None) -> int:
    args = _build_parser().parse_args(argv)
    try:
        allowlist = load_allowlist(args.allowlist)
        reports = [
            classify(f, parse_objdump(_read_text(f)), allowlist)
            if args.objdump_text
            else scan_file(Path(f), allowlist, args.objdump)
            for f in args.files
        ]
    except ScanError as exc:
        print(f"avx512-scan: {exc}", file=sys.stderr)
        return 2
    if args.json:
        print(json.dumps([{**asdict(r), "total": r.total} for r in reports], indent=2))
    for r in reports:
        out = sys.stderr if args.json else sys.stdout
        print(f"avx512-scan: {r.summary()}", file=out)
        if args.verbose:
            for f in r.functions:
                tag = "allowed" if f.name in r.allowed else "OFFENDING"
                print(f"  {tag:9} {f.name}: {f.avx512} (evex {f.evex}, zmm {f.zmm}, k {f.kmask})", file=out)
    bad = [(r, f) for r in reports for f in r.functions if f.name in r.offending]
    if bad:
        print(
            f"avx512-scan: FAIL: {len(bad)} function(s) use AVX-512 without being allowlisted:",
            file=sys.stderr,
        )
        for r, f in bad[:50]:
            print(f"  {r.path}: {f.name}: {f.avx512} instructions, e.g. {f.examples[0]}", file=sys.stderr)
        if len(bad) > 50:
            print(f"  ... and {len(bad) - 50} more", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
