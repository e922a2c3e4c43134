"""`make deploy` without a helm binary: upgrade-or-install charts/ragfr through the Helm v4 library bundled in
helm-python-sdk, with the same layering of values files as repeated `helm -f`.

    python -m ragfr_tools.deploy CHART RELEASE NAMESPACE TIMEOUT_S CONTEXT [VALUES.yaml ...]
    python -m ragfr_tools.deploy --reachable CONTEXT     (does the cluster answer? `make run`, before building)

CONTEXT may be empty (kubectl's current context). One line on failure, exit 1; nothing is half-applied
beyond what Helm itself rolls back.
"""

from __future__ import annotations

import sys
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import yaml


def layered(base: dict[str, Any], top: dict[str, Any]) -> dict[str, Any]:
    """Later values files win key by key, like repeated `helm -f`."""
    out = dict(base)
    for key, value in top.items():
        both = isinstance(value, dict) and isinstance(out.get(key), dict)
        out[key] = layered(out[key], value) if both else value
    return out


def load_values(paths: Sequence[str]) -> dict[str, Any]:
    values: dict[str, Any] = {}
    for path in paths:
        values = layered(values, yaml.safe_load(Path(path).read_text(encoding="utf-8")) or {})
    return values


def unreachable(context: str) -> str | None:
    """Why the cluster of `context` (empty: the current one) does not answer, or None when it does."""
    import helm_python as helm

    try:
        with helm.Config(namespace="default", kube_context=context or None) as cfg:
            cfg.check_reachable()
    except helm.HelmKubeError as exc:
        return f"the cluster of the current kube context does not answer: {exc}"
    return None


def main(argv: Sequence[str] | None = None) -> int:
    args = list(sys.argv[1:] if argv is None else argv)
    if args[:1] == ["--reachable"]:
        why = unreachable(args[1] if len(args) > 1 else "")
        if why:
            print(why, file=sys.stderr)
            return 1
        return 0
    if len(args) < 5:
        print(__doc__, file=sys.stderr)
        return 2
    chart_dir, release, namespace, timeout, context, *value_files = args
    import helm_python as helm  # 244 MB Go library: loaded only when a deployment really happens

    values = load_values(value_files)
    action = "connect"
    try:
        with helm.Config(namespace=namespace, kube_context=context or None) as cfg:
            cfg.check_reachable()
            try:
                cfg.history(release, max_revisions=1)
                action = "upgrade"
            except helm.HelmNotFoundError:
                action = "install"
            common: dict[str, Any] = dict(namespace=namespace, timeout=int(timeout), wait="watcher")
            if action == "install":
                result = cfg.install(chart_dir, release, values, create_namespace=True, **common)
            else:
                result = cfg.upgrade(chart_dir, release, values, **common)
    except helm.HelmKubeError as exc:
        print(f"deploy: the cluster of the current kube context does not answer: {exc}", file=sys.stderr)
        return 1
    except helm.HelmError as exc:
        print(f"deploy: {action} failed: {exc}", file=sys.stderr)
        return 1
    info = result.get("info") or {}
    print(f"deploy: {action} of {release} done: revision {result.get('version', '?')}, "
          f"status {info.get('status', '?')}")
    if info.get("notes"):
        print(info["notes"])
    return 0


if __name__ == "__main__":
    sys.exit(main())
