"""Issue 25 item 5 (Low): every image can be pinned by digest. Each image's tag value takes TAG,
TAG@sha256:<digest> or a bare sha256:<digest> (templates/_helpers.tpl ragfr.image); Open WebUI's version check
reads the tag part, so the supported version pinned by digest passes; scripts/images.sh prints the values that
pin the chart's own images (`pin`, used by push and save)."""

from __future__ import annotations

import copy
import subprocess

import pytest
import yaml
from tests.support.chart import CHART, env_of, error_line, pod_specs, render
from tests.support.paths import REPO

APP_VERSION = str(yaml.safe_load((CHART / "Chart.yaml").read_text())["appVersion"])

D1, D2, D3 = ("sha256:" + c * 64 for c in "abc")
# The image values of the default render (+ metrics, Redis), as paths of keys to their image object.
IMAGES = [("ragdb",), ("ragdb", "metrics"), ("migrations",), ("ollama",), ("openwebui",), ("openwebui", "patch"),
          ("redis",)]  # (openwebui.reranker.image and backup.s3.image are optional; the same ragfr.image renders them)


def _nest(path: tuple[str, ...], leaf: dict) -> dict:  # type: ignore[type-arg]
    out: dict = {"image": leaf}  # type: ignore[type-arg]
    for key in reversed(path):
        out = {key: out}
    return out


def _merge(a: dict, b: dict) -> dict:  # type: ignore[type-arg]
    for k, v in b.items():
        a[k] = _merge(a.get(k, {}), v) if isinstance(v, dict) else v
    return a


def _images(values: dict) -> set[str]:  # type: ignore[type-arg]
    return {c["image"] for _, spec in pod_specs(render(values))
            for c in (spec.get("initContainers") or []) + spec["containers"]}


def _default_image(path: tuple[str, ...]) -> dict:  # type: ignore[type-arg]
    node = yaml.safe_load((CHART / "values.yaml").read_text())
    for key in path:
        node = node[key]
    return node["image"]  # type: ignore[no-any-return]


def test_every_image_accepts_a_tag_pinned_by_digest_and_a_bare_digest() -> None:
    base = {"ragdb": {"metrics": {"enabled": True}}, "redis": {"enabled": True},
            "global": {"imageRegistry": "registry.internal:5000"}}
    plain = _images(copy.deepcopy(base))
    assert all("@" not in ref for ref in plain) and len(plain) >= len(IMAGES)
    pinned, bare = copy.deepcopy(base), copy.deepcopy(base)
    for path in IMAGES:
        tag = _default_image(path)["tag"] or APP_VERSION  # empty: the chart's appVersion
        _merge(pinned, _nest(path, {"tag": f"{tag}@{D1}"}))
        if path != ("openwebui",):  # its version check needs the tag (below)
            _merge(bare, _nest(path, {"tag": D2}))
    assert _images(pinned) == {f"{ref}@{D1}" for ref in plain}
    expected_bare = {ref if "open-webui/open-webui" in ref else f"{ref.rsplit(':', 1)[0]}@{D2}" for ref in plain}
    assert _images(bare) == expected_bare


def test_open_webui_pinned_by_digest_passes_the_version_check() -> None:
    docs = render({"openwebui": {"image": {"tag": f"v0.12.4@{D3}"}}})
    ((_, spec),) = [(o, s) for o, s in pod_specs(docs) if o["metadata"]["name"].endswith("-openwebui")]
    assert spec["containers"][0]["image"] == f"ghcr.io/open-webui/open-webui:v0.12.4@{D3}"
    # The patch init container is told the version, not the digest (its marker records it).
    (patch,) = [c for c in spec["initContainers"] if "OPENWEBUI_VERSION" in env_of(c)]
    assert env_of(patch)["OPENWEBUI_VERSION"] == "v0.12.4"


@pytest.mark.parametrize(("tag", "expected"), [
    (f"v0.12.5@{D3}", f"openwebui.image.tag=v0.12.5@{D3} is not Open WebUI 0.12.4"),
    (D3, f"openwebui.image.tag={D3} is not Open WebUI 0.12.4"),
    ("v0.12.4@sha256:abc", 'tag "v0.12.4@sha256:abc" is neither TAG, TAG@sha256:<64 hex digits>'),
    (f"v0.12.4@{D3.upper()}", "is neither TAG"),
    (f"v0.12.4@{D3}@{D3}", "is neither TAG"),
    (f"latest@{D3}", 'the tag "latest" is not allowed'),
])
def test_bad_or_unversioned_open_webui_references_are_refused(tag: str, expected: str) -> None:
    message = error_line({"openwebui": {"image": {"tag": tag}}})
    assert expected in message, message


def test_a_bare_digest_is_fine_for_open_webui_without_the_patch() -> None:
    docs = render({"openwebui": {"image": {"tag": D3}, "patch": {"enabled": False}}})
    ((_, spec),) = [(o, s) for o, s in pod_specs(docs) if o["metadata"]["name"].endswith("-openwebui")]
    assert spec["containers"][0]["image"] == f"ghcr.io/open-webui/open-webui@{D3}"


def test_a_malformed_digest_is_refused_for_any_image() -> None:
    assert "is neither TAG" in error_line({"ragdb": {"image": {"tag": "0.1.0@sha256:1234"}}})
    assert "is neither TAG" in error_line({"migrations": {"image": {"tag": "sha256:xyz"}}})


def _images_sh(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(["bash", str(REPO / "scripts" / "images.sh"), *args], capture_output=True, text=True,
                          check=False, timeout=30)


def test_images_sh_prints_the_values_that_pin_each_image() -> None:
    version = next(line.split(":", 1)[1].strip().strip('"') for line in (CHART / "Chart.yaml").read_text().splitlines()
                   if line.startswith("appVersion:"))
    keys = {"ragdb": "ragdb.image.tag", "ragfr": "migrations.image.tag", "owui-init": "openwebui.patch.image.tag"}
    for name, key in keys.items():
        done = _images_sh("pin", name, D1)
        assert done.returncode == 0, done.stderr
        assert done.stdout == f"{key}={version}@{D1}\n"
        # What it prints is what the chart takes: --set KEY=VALUE renders the image pinned.
        path, value = key.rsplit(".image.tag", 1)[0].split("."), done.stdout.strip().split("=", 1)[1]
        assert any(i.endswith(f":{version}@{D1}") for i in _images(_nest(tuple(path), {"tag": value})))
    for bad in ("sha256:abc", D1.upper(), "", f"{version}@{D1}"):
        done = _images_sh("pin", "ragdb", bad)
        assert done.returncode == 2 and "is not a sha256 digest" in done.stderr
    assert _images_sh("pin", "redis", D1).returncode == 2
