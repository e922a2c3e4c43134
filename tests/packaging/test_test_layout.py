"""Tests mirror the package: each subpackage of src/ragfr has its folder in tests/ (tests/cli for the `ragfr`
commands), and every other folder in tests/ is one of the few that test what is not the package."""

from __future__ import annotations

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
