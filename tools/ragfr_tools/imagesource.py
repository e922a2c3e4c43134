"""Where a release's images come from, read from the operator's values files as `helm -f` layers them.

    python -m ragfr_tools.imagesource [VALUES.yaml ...]           one line: `registry HOST:PORT` or `imported`
    python -m ragfr_tools.imagesource --upstream [VALUES.yaml ...] the images the chart renders that this project
                                                                  does not build: `RENDERED CONTAINERD-NAME` a line

The first form is what `make run` reads on a cluster before it builds, pushes or applies anything: with neither
global.imageRegistry nor global.imageSource=imported it prints the one refusal line on stderr and exits 2. The
rule is the chart's (templates/_helpers.tpl, "ragfr.imageSource"); the chart refuses the same values.
"""

from __future__ import annotations

import sys
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Any

import yaml

from ragfr_tools.deploy import load_values

CHART = Path(__file__).resolve().parents[2] / "charts" / "ragfr"
REFUSAL = ("no image source in the values: the ragfr images are on no public registry; in my-values.yaml set "
           "either global.imageRegistry: <host:port> (make run VALUES=my-values.yaml builds, pushes there and "
           "deploys) or global.imageSource: imported (images imported into every node's containerd: make "
           "images-save, k3s ctr images import; docs/install.md step 2); nothing was built or applied")
REGISTRY_WITHOUT_HOST = ("global.imageSource=registry needs global.imageRegistry: <host:port> of the registry to "
                         "push to; nothing was built or applied")


class Refused(Exception):
    """The values name no usable image source."""


def image_source(values: dict[str, Any]) -> tuple[str, str]:
    """("registry", host:port) or ("imported", registry-for-upstream-or-""); Refused otherwise."""
    g = values.get("global") or {}
    source, registry = str(g.get("imageSource") or ""), str(g.get("imageRegistry") or "").rstrip("/")
    if source == "imported":
        return "imported", registry
    if source == "registry" and not registry:
        raise Refused(REGISTRY_WITHOUT_HOST)
    if registry:
        return "registry", registry
    raise Refused(REFUSAL)


def image_source_named(values: dict[str, Any]) -> bool:
    g = values.get("global") or {}
    return bool(g.get("imageSource") or g.get("imageRegistry"))


def containerd_name(reference: str) -> str:
    """The name containerd gives an image reference (what `ctr images import` must record for the kubelet to find
    it): docker.io when no registry part, library/ for a one-component Docker Hub name (the docker/distribution
    normalization rule)."""
    first, _, rest = reference.partition("/")
    if not rest or not ("." in first or ":" in first or first == "localhost"):
        first, rest = "docker.io", reference
        if "/" not in rest:
            rest = f"library/{rest}"
    return f"{first}/{rest}"


def rendered_images(values: dict[str, Any]) -> Iterator[str]:
    import helm_python as helm  # the 244 MB Go library, only for --upstream

    out = helm.Chart.load(CHART).render(values, name="ragfr", namespace="ragfr", revision=1, is_install=True)
    seen: set[str] = set()
    for path, text in sorted(out.items()):
        if path.endswith("NOTES.txt"):
            continue
        for doc in yaml.safe_load_all(text):
            for ref in _images(doc):
                if ref not in seen:
                    seen.add(ref)
                    yield ref


def _images(node: Any) -> Iterator[str]:
    if isinstance(node, dict):
        for key, value in node.items():
            if key in ("image", "imageName") and isinstance(value, str):
                yield value
            else:
                yield from _images(value)
    elif isinstance(node, list):
        for item in node:
            yield from _images(item)


def upstream(values: dict[str, Any]) -> list[tuple[str, str]]:
    """(rendered, containerd name) of every image the release names that this project does not build."""
    ours = ("localhost/ragfr/", "docker.io/ragfr/")
    pairs = [(ref, containerd_name(ref)) for ref in rendered_images(values)]
    return [(ref, name) for ref, name in pairs if not name.startswith(ours) and "/ragfr/" not in ref]


def main(argv: Sequence[str] | None = None) -> int:
    args = list(sys.argv[1:] if argv is None else argv)
    want_upstream = bool(args) and args[0] == "--upstream"
    files = args[1:] if want_upstream else args
    values = load_values(files)
    if want_upstream and not image_source_named(values):
        # The save is for importing: the ragfr images are named as imported whatever the values say.
        values.setdefault("global", {})["imageSource"] = "imported"
    try:
        source, registry = image_source(values)
    except Refused as refused:
        print(f"{refused}", file=sys.stderr)
        return 2
    if want_upstream:
        for ref, name in upstream(values):
            print(ref, name)
        return 0
    print(f"registry {registry}" if source == "registry" else "imported")
    return 0


if __name__ == "__main__":
    sys.exit(main())
