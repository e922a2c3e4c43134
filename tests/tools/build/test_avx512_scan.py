"""The AVX-512 scanner: on objdump text, on real compiler output, on our vector.so and on a negative control."""

from __future__ import annotations

import subprocess
import sys
from collections.abc import Callable
from pathlib import Path

import pytest
from tests.support.paths import REPO

from ragfr_tools.build import avx512_scan as scan
from ragfr_tools.build.flavors import FlavorBuild, native_optflags

ALLOWLIST = REPO / "images" / "ragdb" / "avx512-allowlist.txt"

# Lines copied from `objdump -d -w` of a -march=native pgvector build (cooperlake host), plus plain AVX2.
SNIPPET = """\
000000000000c800 <cosine_distance>:
    c811:\t62 f1 fd 48 6f d3    \tvmovdqa64 %zmm3,%zmm2
    c817:\t62 d1 fe 48 6f 3c 03 \tvmovdqu64 (%r11,%rax,1),%zmm7
    c820:\t62 f2 fd 08 3d 45 a0 \tvpmaxsq -0x60(%rbp),%xmm0,%xmm0
    c86c:\tc5 fd 6f c3          \tvmovdqa %ymm3,%ymm0

000000000001c600 <IvfflatKmeans>:
   1c615:\t62 f1 74 48 c2 ca 0e \tvcmpgtps %zmm2,%zmm1,%k1
   1c61c:\tc5 f8 98 c9          \tkortestw %k1,%k1
   1c626:\t62 f1 7c 49 c2 d1 0e \tvcmpgtps %zmm1,%zmm0,%k2{%k1}
   1c62d:\t67 62 f1 7c 48 10 07 \tvmovups (%edi),%zmm0

000000000000d080 <VectorL2SquaredDistance.fma>:
    d092:\tc4 e2 79 b9 d0       \tvfmadd231ss %xmm0,%xmm0,%xmm2
    d097:\tc5 fa 58 c1          \tvaddss %xmm1,%xmm0,%xmm0
    d09b:\t48 8b 04 24          \tmov    (%rsp),%rax

000000000000e000 <BitHammingDistanceAvx512Popcount.cold>:
    e004:\t62 f2 fd 48 55 c0    \tvpopcntq %zmm0,%zmm0
"""


def test_evex_is_recognised_behind_legacy_prefixes_only() -> None:
    assert scan.is_evex(bytes.fromhex("62f1fd486fd3"))
    assert scan.is_evex(bytes.fromhex("6762f17c481007"))  # address-size prefix, then EVEX
    assert not scan.is_evex(bytes.fromhex("c5fd6fc3"))  # 2-byte VEX (AVX2)
    assert not scan.is_evex(bytes.fromhex("c4e279b9d0"))  # 3-byte VEX (FMA)
    assert not scan.is_evex(bytes.fromhex("488b0424"))  # REX.W mov
    assert not scan.is_evex(b"")


def test_counts_per_function_from_objdump_text() -> None:
    by_name = {f.name: f for f in scan.parse_objdump(SNIPPET.splitlines())}
    # AVX2/FMA-only functions are not AVX-512 and must not appear at all.
    assert set(by_name) == {"cosine_distance", "IvfflatKmeans", "BitHammingDistanceAvx512Popcount.cold"}
    cos = by_name["cosine_distance"]
    assert (cos.avx512, cos.evex, cos.zmm, cos.kmask) == (3, 3, 2, 0)  # EVEX on xmm counts too
    km = by_name["IvfflatKmeans"]
    # kortestw is VEX-encoded: caught only through its k register.
    assert (km.avx512, km.evex, km.zmm, km.kmask) == (4, 3, 3, 3)


def test_allowlist_covers_compiler_split_parts_but_not_lookalikes() -> None:
    allow = scan.load_allowlist(ALLOWLIST)
    assert allow == {"BitHammingDistanceAvx512Popcount", "BitJaccardDistanceAvx512Popcount"}
    assert scan.is_allowed("BitHammingDistanceAvx512Popcount.cold", allow)
    assert not scan.is_allowed("BitHammingDistanceAvx512PopcountX", allow)
    report = scan.classify("x", scan.parse_objdump(SNIPPET.splitlines()), allow)
    assert report.offending == ["IvfflatKmeans", "cosine_distance"]
    assert report.allowed == ["BitHammingDistanceAvx512Popcount.cold"]


def test_cli_exit_codes(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    text = tmp_path / "dump.txt"
    text.write_text(SNIPPET)
    assert scan.main(["--objdump-text", "--allowlist", str(ALLOWLIST), str(text)]) == 1
    err = capsys.readouterr().err
    assert "IvfflatKmeans: 4 instructions" in err and "cosine_distance: 3 instructions" in err
    allow_all = tmp_path / "allow.txt"
    allow_all.write_text("# all three\ncosine_distance\nIvfflatKmeans\nBitHammingDistanceAvx512Popcount\n")
    assert scan.main(["--objdump-text", "--allowlist", str(allow_all), str(text)]) == 0
    assert scan.main([str(tmp_path / "missing.so")]) == 2
    assert "no such file" in capsys.readouterr().err


def test_real_compiler_output_is_attributed_to_the_right_function(tmp_path: Path) -> None:
    """gcc-compiled object: only the function compiled for AVX-512 is flagged, and the allowlist clears it."""
    c = tmp_path / "probe.c"
    c.write_text(
        "#include <immintrin.h>\n"
        '__attribute__((target("avx512f"))) float wide_sum(const float *x) {\n'
        "  return _mm512_reduce_add_ps(_mm512_loadu_ps(x)); }\n"
        "float plain_sum(const float *x, int n) { float s = 0; for (int i = 0; i < n; i++) s += x[i]; return s; }\n"
    )
    obj = tmp_path / "probe.o"
    subprocess.run(["gcc", "-O2", "-c", str(c), "-o", str(obj)], check=True)
    report = scan.scan_file(obj, set())
    assert report.offending == ["wide_sum"]
    assert report.functions[0].zmm > 0
    assert scan.scan_file(obj, {"wide_sum"}).offending == []


def test_production_vector_so_is_clean(pgroot: Path) -> None:
    """Our build keeps runtime dispatch: AVX-512 exists only in the two CPUID-guarded functions."""
    so = pgroot / "usr/lib/postgresql/15/lib/vector.so"
    report = scan.scan_file(so, scan.load_allowlist(ALLOWLIST))
    assert report.offending == [], report.summary()
    assert sorted(report.allowed) == sorted(scan.load_allowlist(ALLOWLIST)), report.summary()


@pytest.mark.slow
def test_dispatch_disabled_build_has_no_avx512(flavor: Callable[[str], FlavorBuild]) -> None:
    report = scan.scan_file(flavor("nodispatch").vector_so, set())
    assert report.total == 0, report.summary()


@pytest.mark.slow
def test_negative_control_native_build_is_flagged(flavor: Callable[[str], FlavorBuild]) -> None:
    """The control's distance functions carry AVX-512: upstream's `-march=native` on an AVX-512 host, elsewhere
    `native_optflags()`'s explicit AVX-512 target with 512-bit vectors (cooperlake's own tuning keeps them AVX2)."""
    so = flavor("native").vector_so
    report = scan.scan_file(so, scan.load_allowlist(ALLOWLIST))
    assert {"cosine_distance", "l2_distance", "inner_product"} <= set(report.offending), report.summary()
    proc = subprocess.run(
        [sys.executable, "-m", "ragfr_tools.build.avx512_scan", "--allowlist", str(ALLOWLIST), str(so)],
        capture_output=True, text=True, check=False,
    )
    assert proc.returncode == 1 and "FAIL" in proc.stderr


@pytest.mark.slow
def test_build_script_fails_on_a_native_build(tmp_path: Path) -> None:
    """The guard itself: build-pgvector.sh (as make setup and the Containerfile run it) refuses the build."""
    src = next((REPO / ".build/pgvector-src").glob("pgvector-*"))
    proc = subprocess.run(
        [str(REPO / "images/ragdb/build-pgvector.sh"), "--src", str(src), "--destdir", str(tmp_path / "d"),
         "--workdir", str(tmp_path / "w"), "--optflags", native_optflags()],
        capture_output=True, text=True, check=False,
    )
    assert proc.returncode == 1, proc.stdout + proc.stderr
    assert "use AVX-512 without being allowlisted" in proc.stderr
