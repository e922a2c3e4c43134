"""Offline rendering of charts/ragfr with the Helm v4 library bundled in helm-python-sdk (no cluster)."""

from __future__ import annotations

import re
from collections.abc import Iterator
from fnmatch import fnmatchcase
from functools import cache
from typing import Any

import helm_python as helm
import yaml
from tests.support.paths import REPO

CHART = REPO / "charts" / "ragfr"
EXAMPLES = sorted(p.stem for p in (CHART / "examples").glob("*.yaml"))
GOLDEN = REPO / "tests" / "chart" / "golden"
KUBE_VERSIONS = ["1.29.0", "1.30.0", "1.31.0", "1.32.0", "1.33.0"]
RELEASE, NAMESPACE = "ragfr", "ragfr"

Doc = dict[str, Any]


@cache
def chart() -> helm.Chart:
    return helm.Chart.load(CHART)


def example_values(name: str) -> dict[str, Any]:
    return yaml.safe_load((CHART / "examples" / f"{name}.yaml").read_text()) or {}


# An operator's my-values.yaml always says where the nodes get the ragfr images (the chart refuses a render that
# does not: tests/chart/test_image_source.py). Examples and test values are fragments layered over it: those that
# name no image source get the k3s walk's (imported), the one `examples/k3s-first-install.yaml` sets.
OPERATOR_IMAGE_SOURCE: dict[str, Any] = {"imageSource": "imported"}


def with_image_source(values: dict[str, Any] | None) -> dict[str, Any]:
    values = dict(values or {})
    given = values.get("global") or {}
    if not (given.get("imageSource") or given.get("imageRegistry")):
        values["global"] = {**given, **OPERATOR_IMAGE_SOURCE}
    return values


def render_raw(values: dict[str, Any] | None = None, revision: int = 1) -> dict[str, str]:
    return chart().render(with_image_source(values), name=RELEASE, namespace=NAMESPACE, revision=revision,
                          is_install=True)


def render(values: dict[str, Any] | None = None, revision: int = 1) -> list[Doc]:
    """Every rendered object (NOTES.txt excluded), in template then document order."""
    docs: list[Doc] = []
    for path, text in sorted(render_raw(values, revision).items()):
        if path.endswith("NOTES.txt"):
            continue
        # libyaml's safe loader: the same objects as yaml.safe_load_all (checked on every example's render),
        # parsed ten times faster (0.03 s instead of 0.32 s a render; the chart tests render hundreds of times).
        docs.extend(d for d in yaml.load_all(text, Loader=yaml.CSafeLoader) if d)
    return docs


def one(docs: list[Doc], kind: str, name_suffix: str) -> Doc:
    """The one object of kind whose name ends with name_suffix, a glob: the Jobs' names end with a hash of their
    spec (_jobs.tpl), "-migrate-*"."""
    found = [d for d in docs if d["kind"] == kind and fnmatchcase(d["metadata"]["name"], "*" + name_suffix)]
    assert len(found) == 1, f"expected one {kind} *{name_suffix}, got {[d['metadata']['name'] for d in found]}"
    return found[0]


def pod_specs(docs: list[Doc]) -> Iterator[tuple[Doc, Doc]]:
    """(object, pod spec) for every object that runs pods."""
    for d in docs:
        if d["kind"] == "Pod":
            yield d, d["spec"]
        elif d["kind"] in ("Deployment", "StatefulSet", "Job", "DaemonSet"):
            yield d, d["spec"]["template"]["spec"]


def containers(spec: Doc) -> Iterator[tuple[str, Doc]]:
    for c in spec.get("initContainers", []):
        yield "init", c
    for c in spec.get("containers", []):
        yield "main", c


def env_of(container: Doc) -> dict[str, Any]:
    return {e["name"]: e.get("value", e.get("valueFrom")) for e in container.get("env", [])}


def error_line(values: dict[str, Any]) -> str:
    """The message Helm gives for rejected values, without its template-location prefix."""
    try:
        render_raw(values)
    except helm.HelmError as exc:
        return re.sub(r"^execution error at \([^)]*\): ", "", str(exc).strip())
    raise AssertionError(f"values were accepted: {values}")


def normalized(docs: list[Doc]) -> str:
    """Deterministic text for golden files: objects ordered by kind and name (so moving an object to another
    template file changes no golden), generated Secret data replaced by a placeholder."""
    out = []
    for d in sorted(docs, key=lambda d: (d["kind"], d["metadata"]["name"])):
        if d["kind"] == "Secret":
            d = {**d, "data": {k: "<generated>" for k in d.get("data", {})}}
        out.append(yaml.safe_dump(d, sort_keys=True, allow_unicode=True))
    return "---\n".join(out)
