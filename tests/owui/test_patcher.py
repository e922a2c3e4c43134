"""The patcher on the REAL open-webui 0.12.4 files: pristine, twice, modified, other version, atomicity.

Every refusal must exit 2 with the file, the anchor and the expected version in ONE line, and leave
every file byte-identical (nothing written, no temporary file left behind).
"""

from __future__ import annotations

import hashlib
import json
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from ragfr.owui.patcher import marker
from ragfr.owui.patcher.edits import apply_edits
from ragfr.owui.patcher.manifest import Edit, load
from ragfr.owui.patcher.status import check

from .conftest import APPLY, MANIFEST, PATCHED_FILES, run_apply

pytestmark = pytest.mark.owui


@pytest.fixture
def tree(owui_site_packages: Path, tmp_path: Path) -> Path:
    """Only the patched files (+ dist-info): the patcher touches nothing else."""
    root = tmp_path / "backend"
    for rel in PATCHED_FILES:
        (root / rel).parent.mkdir(parents=True, exist_ok=True)
        shutil.copy2(owui_site_packages / rel, root / rel)
    for info in owui_site_packages.glob("open_webui-*.dist-info"):
        shutil.copytree(info, root / info.name)
    return root


def snapshot(root: Path) -> dict[str, str]:
    return {str(p.relative_to(root)): hashlib.sha256(p.read_bytes()).hexdigest() for p in sorted(root.rglob("*"))
            if p.is_file()}


def test_pristine_files_match_the_manifest(owui_site_packages: Path) -> None:
    manifest = load(MANIFEST)
    assert manifest.owui_version == "0.12.4"
    for spec in manifest.files:
        digest = hashlib.sha256((owui_site_packages / spec.path).read_bytes()).hexdigest()
        assert digest == spec.sha256, f"{spec.path}: the installed open-webui is not the pinned 0.12.4"


def test_patch_pristine_then_again(tree: Path) -> None:
    first = run_apply(tree)
    assert first.returncode == 0, first.stderr
    assert "patched: open_webui/retrieval/utils.py (4 edits)" in first.stdout
    after_first = snapshot(tree)
    for rel in PATCHED_FILES:
        text = (tree / rel).read_text(encoding="utf-8")
        found, body = marker.read(text)
        assert found is not None and found.owui_version == "0.12.4" and marker.intact(found, body)
        compile(text, rel, "exec")
        assert "from ragfr.owui." in text
    pg = (tree / PATCHED_FILES[0]).read_text(encoding="utf-8")
    assert "plainto_tsquery('simple'" not in pg, "the stock keyword arm must be gone"
    assert "vector += [0.0]" not in pg, "zero-padding must be gone"
    assert check(tree, load(MANIFEST)).active

    second = run_apply(tree)
    assert second.returncode == 0, second.stderr
    assert second.stdout.count("already patched") == len(PATCHED_FILES)
    assert snapshot(tree) == after_first, "patching twice must not change a byte"


def _refused(tree: Path, before: dict[str, str], *needles: str) -> str:
    done = run_apply(tree)
    assert done.returncode == 2, (done.returncode, done.stdout, done.stderr)
    lines = done.stderr.strip().splitlines()
    assert len(lines) == 1, lines
    for needle in needles:
        assert needle in lines[0], (needle, lines[0])
    assert snapshot(tree) == before, "a refusal must leave every file byte-identical"
    return lines[0]


def test_modified_file_is_refused_and_nothing_written(tree: Path) -> None:
    utils = tree / PATCHED_FILES[1]
    utils.write_text(utils.read_text(encoding="utf-8") + "\n# a local edit\n", encoding="utf-8")
    line = _refused(tree, snapshot(tree), PATCHED_FILES[1], "expected open-webui 0.12.4", "nothing written")
    assert "anchors still match but the file was modified" in line
    # pgvector.py (checked first and fine) was not written either: all files or none.
    assert marker.read((tree / PATCHED_FILES[0]).read_text(encoding="utf-8"))[0] is None


def test_other_version_names_the_missing_anchor(tree: Path) -> None:
    pg = tree / PATCHED_FILES[0]
    text = pg.read_text(encoding="utf-8").replace("hybrid_bm25_weight: float = 0.5,", "bm25_weight: float = 0.5,")
    pg.write_text(text, encoding="utf-8")
    info = next(tree.glob("open_webui-*.dist-info")) / "METADATA"
    info.write_text(info.read_text(encoding="utf-8").replace("Version: 0.12.4", "Version: 0.13.0"), encoding="utf-8")
    _refused(
        tree, snapshot(tree), PATCHED_FILES[0], "target reports version 0.13.0", "anchor 'native-hybrid-search'",
        "PgvectorClient.hybrid_search", "expected open-webui 0.12.4",
    )


def test_missing_file_and_bad_target(tree: Path, tmp_path: Path) -> None:
    (tree / PATCHED_FILES[1]).unlink()
    _refused(tree, snapshot(tree), PATCHED_FILES[1], "not found", "expected open-webui 0.12.4")
    done = run_apply(tmp_path / "nowhere")
    assert done.returncode == 2 and "is not a directory" in done.stderr


def test_tampered_patched_file_is_refused(tree: Path) -> None:
    assert run_apply(tree).returncode == 0
    pg = tree / PATCHED_FILES[0]
    pg.write_text(pg.read_text(encoding="utf-8").replace("ragfr_hybrid_search(", "ragfr_hybrid_search (", 1),
                  encoding="utf-8")
    _refused(tree, snapshot(tree), PATCHED_FILES[0], "does not verify", "expected open-webui 0.12.4")
    assert not check(tree, load(MANIFEST)).active


def test_result_that_does_not_compile_is_never_written(tree: Path, tmp_path: Path) -> None:
    bad = tmp_path / "bad-manifest"
    shutil.copytree(MANIFEST.parent, bad, ignore=shutil.ignore_patterns("apply"))
    (bad / "bodies" / "pgvector_adjust_vector_length.py.in").write_text("return (\n", encoding="utf-8")
    before = snapshot(tree)
    done = subprocess.run(
        [sys.executable, str(APPLY), "--target", str(tree), "--manifest", str(bad / "manifest.json")],
        capture_output=True, text=True, check=False,
    )
    assert done.returncode == 2 and "does not compile" in done.stderr, done.stderr
    assert snapshot(tree) == before


def test_unknown_manifest_kind_is_a_clear_error(tmp_path: Path, tree: Path) -> None:
    raw = json.loads(MANIFEST.read_text(encoding="utf-8"))
    raw["files"][0]["edits"][0]["kind"] = "sed"
    (tmp_path / "m.json").write_text(json.dumps(raw), encoding="utf-8")
    done = run_apply(tree, "--manifest", str(tmp_path / "m.json"))
    assert done.returncode == 2 and "kind 'sed' is not one of" in done.stderr


def test_replace_text_keeps_indentation_and_requires_one_occurrence() -> None:
    source = "def f(x):\n    if x:\n        y = x.split()\n    return y\n"
    edit = Edit("e", "replace_text", "f", "y = x.split()\n", "import m\ny = m.tok(x)\n")
    expected = "def f(x):\n    if x:\n        import m\n        y = m.tok(x)\n    return y\n"
    assert apply_edits(source, (edit,)) == expected
    twice = "def f(x):\n    a = 1\n    a = 1\n"
    problems = apply_edits(twice, (Edit("e", "replace_text", "f", "a = 1", "b"),))
    assert isinstance(problems, list) and "found 2 times" in problems[0].reason
    missing = apply_edits(source, (Edit("e", "replace_body", "g", "def g():", "pass"),))
    assert isinstance(missing, list) and "function g not found" in missing[0].reason


def test_replace_body_keeps_signature_and_replaces_leading_comments() -> None:
    source = "class C:\n    def m(self, v: list) -> list:\n        # old comment\n        return v + [0]\n\n    x = 1\n"
    edit = Edit("e", "replace_body", "C.m", "def m(self, v: list) -> list:", "# new\n\nreturn list(v)")
    out = apply_edits(source, (edit,))
    assert out == "class C:\n    def m(self, v: list) -> list:\n        # new\n\n        return list(v)\n\n    x = 1\n"
