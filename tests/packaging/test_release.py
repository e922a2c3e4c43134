"""Releases an upgrade can tell apart (tools/ragfr_tools/release.py, `make release`, `make chart-push`).

The first test is the gate: it fails whenever what ships (migrations, src, patches, images, the chart) changed and
the chart version was not bumped with `make release VERSION=x.y.z`. The others run the bump, the migrations Job's
name and the OCI push on a copy of the checkout (a scratch git repository), so they hold whatever the checkout's
own record says, and push to a real registry on loopback.
"""

from __future__ import annotations

import json
import re
import shutil
import subprocess
import tarfile
import urllib.request
from pathlib import Path
from typing import Any

import helm_python as helm
import pytest
import yaml
from tests.support.chart import NAMESPACE, RELEASE, with_image_source
from tests.support.paths import REPO
from tests.support.registry import loopback_registry

from ragfr_tools import release

CHANGELOG = REPO / "CHANGELOG.md"


def test_what_ships_is_recorded_under_the_chart_version() -> None:
    # Fails on a change to what ships that reached the checkout without `make release VERSION=x.y.z`.
    release.check(REPO)


def test_the_package_says_the_chart_version() -> None:
    import ragfr

    version, _ = release.chart_versions(REPO)
    assert ragfr.__version__ == version, "make release VERSION=x.y.z sets both; one was edited by hand"


def test_the_changelog_has_the_released_version() -> None:
    version, _ = release.chart_versions(REPO)
    headings = re.findall(r"^## (\S+)(.*)$", CHANGELOG.read_text(), re.MULTILINE)
    released = [rest for v, rest in headings if v == version]
    assert released, f"CHANGELOG.md has no '## {version}' section (the chart's version)"
    assert "unreleased" not in released[0].lower(), f"CHANGELOG.md still calls {version} unreleased"


def checkout_copy(dest: Path) -> Path:
    """What ships, copied into a scratch git repository (untracked files count, as in the checkout)."""
    for name in (*release.SHIPPED, ".gitignore", "CHANGELOG.md"):
        src = REPO / name
        if src.is_dir():
            shutil.copytree(src, dest / name, symlinks=True, ignore=shutil.ignore_patterns("__pycache__", "*.pyc"))
        else:
            (dest / name).parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(src, dest / name)
    subprocess.run(["git", "init", "-q", str(dest)], check=True)
    return dest


def rendered(root: Path) -> list[dict[str, Any]]:
    chart = helm.Chart.load(root / "charts" / "ragfr")
    out = chart.render(with_image_source({}), name=RELEASE, namespace=NAMESPACE, revision=1, is_install=True)
    return [d for k, t in sorted(out.items()) if not k.endswith("NOTES.txt") for d in yaml.safe_load_all(t) if d]


def migrations_job(docs: list[dict[str, Any]]) -> dict[str, Any]:
    jobs = [d for d in docs if d["kind"] == "Job" and d["metadata"]["name"].startswith(f"{RELEASE}-migrate-")]
    assert len(jobs) == 1, [d["metadata"]["name"] for d in docs if d["kind"] == "Job"]
    return jobs[0]


def project_images(docs: list[dict[str, Any]]) -> set[str]:
    images = set()
    for d in docs:
        spec = d.get("spec", {}).get("template", {}).get("spec") or d.get("spec", {}).get("jobTemplate", {}).get(
            "spec", {}).get("template", {}).get("spec") or {}
        for c in spec.get("initContainers", []) + spec.get("containers", []):
            if "/ragfr/" in c["image"]:
                images.add((c["image"], c.get("imagePullPolicy")))
    return images


@pytest.fixture()
def copy(tmp_path: Path) -> Path:
    root = checkout_copy(tmp_path / "checkout")
    version, _ = release.chart_versions(root)
    major, minor, patch = (int(x) for x in version.split("."))
    # Recorded in the copy first: the checkout may hold a change its own gate (above) is about to refuse.
    release.bump(f"{major}.{minor}.{patch + 1}", root)
    release.check(root)
    return root


def test_a_new_migration_fails_the_gate_until_the_bump_and_runs_a_new_job(copy: Path) -> None:
    before_version, _ = release.chart_versions(copy)
    before = rendered(copy)
    (copy / "migrations" / "0900_release_test.sql").write_text("-- a migration added without a bump\n")
    with pytest.raises(release.ReleaseError, match=r"changed since .* make release VERSION="):
        release.check(copy)
    # The same number twice, or an older one, is refused: nodes already hold images under it.
    for stale in (before_version, "0.0.9"):
        with pytest.raises(release.ReleaseError, match="not newer"):
            release.bump(stale, copy)
    major, minor, _ = (int(x) for x in before_version.split("."))
    new = f"{major}.{minor + 1}.0"
    notes = release.bump(new, copy)
    assert any(f"'## {new}' section of CHANGELOG.md" in n for n in notes), notes
    release.check(copy)
    assert release.chart_versions(copy) == (new, new)
    # The package in the images says the release's version too (`ragfr --version` in a pod).
    assert f'version = "{new}"' in (copy / "pyproject.toml").read_text()
    assert f'__version__ = "{new}"' in (copy / "src" / "ragfr" / "__init__.py").read_text()
    after = rendered(copy)
    # A new Job (so it runs on `helm upgrade`), on the new image tag; every project image moved with it and
    # is pulled IfNotPresent only under a tag that changes with the content (imported: Never, same tag rule).
    assert migrations_job(after)["metadata"]["name"] != migrations_job(before)["metadata"]["name"]
    assert migrations_job(after)["spec"]["template"]["spec"]["containers"][0]["image"].endswith(f":{new}")
    assert {i for i, _ in project_images(before)} and all(i.endswith(f":{before_version}")
                                                          for i, _ in project_images(before))
    assert all(i.endswith(f":{new}") for i, _ in project_images(after))
    assert {p for _, p in project_images(after)} <= {"IfNotPresent", "Never"}


def test_the_job_name_moves_with_the_migrations_even_under_a_pinned_image(copy: Path) -> None:
    # The chart packages the migrations (files/migrations links to migrations/) and hashes them into the Job's
    # name: an operator who pins the migrate image by an unchanged reference still gets a new Job.
    pinned = {"migrations": {"image": {"tag": "0.1.0@sha256:" + "a" * 64}}}

    def job_name() -> str:
        chart = helm.Chart.load(copy / "charts" / "ragfr")
        out = chart.render(with_image_source(pinned), name=RELEASE, namespace=NAMESPACE, revision=1, is_install=True)
        docs = [d for k, t in out.items() if not k.endswith("NOTES.txt") for d in yaml.safe_load_all(t) if d]
        return str(migrations_job(docs)["metadata"]["name"])

    first = job_name()
    (copy / "migrations" / "0900_release_test.sql").write_text("-- one more migration\n")
    second = job_name()
    assert second != first
    (copy / "migrations" / "0900_release_test.sql").write_text("-- the same migration, edited\n")
    assert job_name() not in (first, second)


def test_examples_are_not_what_ships(copy: Path) -> None:
    # Scenario files stay out of the package (.helmignore): editing one needs no release.
    example = next((copy / "charts" / "ragfr" / "examples").glob("*.yaml"))
    example.write_text(example.read_text() + "\n# a comment\n")
    release.check(copy)


def test_the_chart_is_pushed_to_a_registry_as_helm_oci_and_pulls_back_as_the_chart(copy: Path,
                                                                                    tmp_path: Path) -> None:
    version, _ = release.chart_versions(copy)
    with loopback_registry(tmp_path) as registry:
        reference, digest = release.push(registry, tmp_path / "pkg", plain_http=True, root=copy)
        assert reference == f"{registry}/charts/ragfr:{version}"
        assert re.fullmatch(r"sha256:[0-9a-f]{64}", digest), digest
        # Helm's OCI layout (helm.sh/docs/topics/registries): one config and one chart-content layer.
        request = urllib.request.Request(f"http://{registry}/v2/charts/ragfr/manifests/{version}",
                                         headers={"Accept": "application/vnd.oci.image.manifest.v1+json"})
        with urllib.request.urlopen(request, timeout=30) as answer:
            manifest = json.load(answer)
            assert answer.headers["Docker-Content-Digest"] == digest
        assert manifest["config"]["mediaType"] == "application/vnd.cncf.helm.config.v1+json"
        assert [layer["mediaType"] for layer in manifest["layers"]] == [
            "application/vnd.cncf.helm.chart.content.v1.tar+gzip"]
        assert manifest["annotations"]["org.opencontainers.image.version"] == version
        pulled = tmp_path / "pulled"
        pulled.mkdir()
        helm.pull(f"oci://{registry}/charts/ragfr", version=version, destination=pulled, plain_http=True)
    archive = pulled / f"ragfr-{version}.tgz"
    with tarfile.open(archive) as tar:
        names = tar.getnames()
        tar.extractall(pulled / "x", filter="data")
    assert "ragfr/release.json" in names and not any(n.startswith("ragfr/examples/") for n in names)
    # The very chart: it renders what the source chart renders, its release record included.
    source = helm.Chart.load(copy / "charts" / "ragfr")
    got = helm.Chart.load(pulled / "x" / "ragfr")
    values = with_image_source({})
    mine, theirs = (c.render(values, name=RELEASE, namespace=NAMESPACE, revision=1, is_install=True)
                    for c in (got, source))
    assert mine.keys() == theirs.keys()
    # Generated Secrets draw new random passwords on every render: all the rest is byte for byte.
    assert {k: t for k, t in mine.items() if "secret" not in k} == {k: t for k, t in theirs.items() if "secret" not in k}
    assert json.loads((pulled / "x" / "ragfr" / "release.json").read_text()) == release.recorded(copy)
