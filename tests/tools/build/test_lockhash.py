"""ragfr_tools.build.lockhash: which files' digests it keeps for a pin, and how it rewrites a requirements file.

The index is a stand-in (a dict of PEP 691 `files` lists), so these run offline; the real files are rewritten
from PyPI by a maintainer (the lock's header) and checked by pip at every image build.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from ragfr_tools.build import lockhash
from ragfr_tools.build.lockhash import LockError, Pin, Target


def digest(n: int) -> str:
    return f"{n:064x}"


def entry(filename: str, n: int, yanked: bool | str = False) -> dict[str, object]:
    return {"filename": filename, "hashes": {"sha256": digest(n)}, "yanked": yanked}


INDEX: dict[str, list[dict[str, object]]] = {
    "pystemmer": [
        entry("PyStemmer-2.2.0.3.tar.gz", 1),  # sdist: never
        entry("PyStemmer-2.2.0.3-cp311-cp311-manylinux_2_5_x86_64.manylinux1_x86_64.manylinux_2_17_x86_64."
              "manylinux2014_x86_64.whl", 2),
        entry("PyStemmer-2.2.0.3-cp311-cp311-manylinux_2_28_x86_64.whl", 3),
        entry("PyStemmer-2.2.0.3-cp311-cp311-manylinux_2_39_x86_64.whl", 4),  # newer glibc than Debian 12's
        entry("PyStemmer-2.2.0.3-cp311-cp311-musllinux_1_1_x86_64.whl", 5),
        entry("PyStemmer-2.2.0.3-cp311-cp311-manylinux2014_aarch64.whl", 6),
        entry("PyStemmer-2.2.0.3-cp312-cp312-manylinux2014_x86_64.whl", 7),
        entry("PyStemmer-2.2.0.3-cp311-cp311-win_amd64.whl", 8),
        entry("PyStemmer-2.2.0.2-cp311-cp311-manylinux2014_x86_64.whl", 9),  # another release
    ],
    "charset-normalizer": [
        entry("charset_normalizer-3.5.3-cp37-abi3-manylinux1_x86_64.whl", 10),  # stable ABI, older cp: yes
        entry("charset_normalizer-3.5.3-cp312-abi3-manylinux1_x86_64.whl", 11),  # stable ABI from 3.12: no
        entry("charset_normalizer-3.5.3-py3-none-any.whl", 12),  # pure fallback: pip can pick it
        entry("charset_normalizer-3.5.3-py312-none-any.whl", 13),
    ],
    "six": [entry("six-1.17.0-py2.py3-none-any.whl", 14)],
    "oldthing": [entry("oldthing-1.0-py3-none-any.whl", 15, yanked="broken metadata")],
    "sdistonly": [entry("sdistonly-1.0.tar.gz", 16)],
}


def fetch(name: str) -> list[dict[str, object]]:
    return INDEX[lockhash.canonical(name)]


def test_keeps_every_wheel_pip_could_install_on_the_images_platform_and_nothing_else() -> None:
    t = Target()
    assert lockhash.digests(Pin("PyStemmer", "2.2.0.3"), fetch("PyStemmer"), t) == [digest(2), digest(3)]
    assert lockhash.digests(Pin("charset_normalizer", "3.5.3"), fetch("charset-normalizer"), t) == [
        digest(10), digest(12)]
    assert lockhash.digests(Pin("six", "1.17.0"), fetch("six"), t) == [digest(14)]
    # Another target is another set: a newer glibc, then Python 3.12.
    newer_glibc = Target((3, 11), 39)
    assert lockhash.digests(Pin("PyStemmer", "2.2.0.3"), fetch("PyStemmer"), newer_glibc) == [
        digest(2), digest(3), digest(4)]
    assert lockhash.digests(Pin("PyStemmer", "2.2.0.3"), fetch("PyStemmer"), Target((3, 12))) == [digest(7)]
    assert lockhash.digests(Pin("charset_normalizer", "3.5.3"), fetch("charset-normalizer"), Target((3, 12))) == [
        digest(10), digest(11), digest(12), digest(13)]


def test_a_yanked_release_or_one_with_no_fitting_wheel_is_an_error() -> None:
    with pytest.raises(LockError, match="yanked on the index \\(broken metadata\\)"):
        lockhash.digests(Pin("oldthing", "1.0"), fetch("oldthing"), Target())
    with pytest.raises(LockError, match="no wheel for CPython 3.11.*no wheel of this release at all"):
        lockhash.digests(Pin("sdistonly", "1.0"), fetch("sdistonly"), Target())
    with pytest.raises(LockError, match="no wheel for CPython 3.11.*cp311-cp311-manylinux2014_x86_64"):
        lockhash.digests(Pin("PyStemmer", "2.2.0.2"), fetch("PyStemmer"), Target((3, 11), 36, "aarch64"))


TEXT = """\
# header comment, kept
PyStemmer==2.2.0.3 \\
    --hash=sha256:{old}

# a comment between pins, kept
six==1.17.0
charset_normalizer==3.5.3 --hash sha256:{old}
""".format(old="f" * 64)


def test_rehash_replaces_the_hashes_and_keeps_everything_else() -> None:
    new = lockhash.rehash(TEXT, fetch, Target())
    assert new == (
        "# header comment, kept\n"
        f"PyStemmer==2.2.0.3 \\\n    --hash=sha256:{digest(2)} \\\n    --hash=sha256:{digest(3)}\n"
        "\n# a comment between pins, kept\n"
        f"six==1.17.0 \\\n    --hash=sha256:{digest(14)}\n"
        f"charset_normalizer==3.5.3 \\\n    --hash=sha256:{digest(10)} \\\n    --hash=sha256:{digest(12)}\n")
    assert lockhash.rehash(new, fetch, Target()) == new
    assert [(p.name, p.version, len(p.hashes), p.line) for p in lockhash.parse(new) if isinstance(p, Pin)] == [
        ("PyStemmer", "2.2.0.3", 2, 2), ("six", "1.17.0", 1, 7), ("charset_normalizer", "3.5.3", 2, 9)]


@pytest.mark.parametrize("line, message", [
    ("six>=1.16", "is not `name==version`"),
    ("six[extra]==1.17.0", "is not `name==version`"),
    ("six==1.17.0 ; python_version < '4'", "only --hash=sha256"),
    ("six==1.17.0 --hash=md5:abc", "only --hash=sha256"),
    ("six==1.17.0  # why", "a comment after a requirement"),
    ("six==1.17.0 \\", "continuation line is missing"),
])
def test_anything_but_a_hashed_pin_is_refused(line: str, message: str) -> None:
    with pytest.raises(LockError, match=message):
        lockhash.parse(line + "\n", "lock")


def test_every_problem_is_reported_and_the_file_left_alone(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    lock = tmp_path / "requirements.lock"
    lock.write_text("oldthing==1.0\nsix==1.17.0\nsdistonly==1.0\n")
    assert lockhash.main([str(lock)], fetch=fetch) == 1
    err = capsys.readouterr().err
    assert f"{lock}:1: oldthing==1.0 is yanked" in err and f"{lock}:3: sdistonly==1.0: no wheel" in err
    assert lock.read_text() == "oldthing==1.0\nsix==1.17.0\nsdistonly==1.0\n"


def test_check_reports_a_stale_file_and_writing_makes_it_current(tmp_path: Path) -> None:
    lock = tmp_path / "requirements.lock"
    lock.write_text(TEXT)
    assert lockhash.main(["--check", str(lock)], fetch=fetch) == 1
    assert lock.read_text() == TEXT
    assert lockhash.main([str(lock)], fetch=fetch) == 0
    assert lockhash.main(["--check", str(lock)], fetch=fetch) == 0
    assert lockhash.main(["--check", "--python", "3", str(lock)], fetch=fetch) == 2  # bad target


def test_an_index_that_does_not_answer_is_exit_2(tmp_path: Path) -> None:
    lock = tmp_path / "requirements.lock"
    lock.write_text("six==1.17.0\n")

    def down(name: str) -> list[dict[str, object]]:
        raise LockError("https://index.invalid/six/: Name or service not known")

    assert lockhash.main([str(lock)], fetch=down) == 2
    assert lock.read_text() == "six==1.17.0\n"

