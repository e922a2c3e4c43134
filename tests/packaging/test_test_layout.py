"""Tests mirror the package: each subpackage of src/ragfr has its folder in tests/ (tests/cli for the `ragfr`
commands), and every other folder in tests/ is one of the few that test what is not the package."""

from __future__ import annotations

import re

from tests.support.paths import REPO

PRODUCT = REPO / "src" / "ragfr"
# What tests/ holds beside the package's mirror: the chart, the docs, the images, the build and bench tools
# (ragfr_tools), the packaging rules (this file), and shared support code.
NOT_THE_PACKAGE = {"chart", "docs", "images", "tools", "packaging", "support"}


def subpackages() -> set[str]:
    return {p.name for p in PRODUCT.iterdir() if p.is_dir() and any(p.glob("*.py"))}


def test_each_subpackage_has_its_test_folder() -> None:
    missing = sorted(name for name in subpackages() if not any((REPO / "tests" / name).glob("test_*.py")))
    assert not missing, f"src/ragfr subpackages without tests/<name>/test_*.py: {missing}"


def test_every_test_folder_mirrors_a_subpackage_or_says_what_it_tests() -> None:
    folders = {p.name for p in (REPO / "tests").iterdir() if p.is_dir() and not p.name.startswith((".", "__"))}
    strays = sorted(folders - subpackages() - NOT_THE_PACKAGE)
    assert not strays, f"tests/ folders that mirror no package and are not listed in NOT_THE_PACKAGE: {strays}"


def lane_paths() -> dict[str, list[str]]:
    """The test paths scripts/test.sh gives its lanes (`name=(path ...)`); the compute lane is the rest."""
    text = (REPO / "scripts" / "test.sh").read_text()
    return {m[1]: m[2].split() for m in re.finditer(r"^\s*(indexes|owui|images)=\(([^)]*)\)$", text, re.M)}


def test_every_path_a_lane_names_exists_and_belongs_to_one_lane() -> None:
    # The compute lane --ignores the other lanes' paths: a path renamed without test.sh would run twice (an
    # --ignore of nothing is silent), so each named path must exist.
    lanes = lane_paths()
    assert set(lanes) == {"indexes", "owui", "images"}, lanes
    missing = [p for paths in lanes.values() for p in paths if not (REPO / p).exists()]
    assert not missing, f"scripts/test.sh names test paths that do not exist: {missing}"
    # The index lane ignores the image lane's paths under it; nothing else may be named by two lanes.
    flat = [p for paths in lanes.values() for p in paths]
    assert len(flat) == len(set(flat)), lanes
    assert not any(p == o or p.startswith(o + "/") for p in lanes["owui"] for o in lanes["indexes"] + lanes["images"])
