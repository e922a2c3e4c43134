"""`make chart-render`: the manifests of charts/ragfr, like `helm template`, with no cluster and no helm binary
(the Helm v4 library of helm-python-sdk): of the operator's values files, layered in order like repeated `helm -f`
(`make chart-render VALUES=my-values.yaml`), or of one example (`make chart-render EXAMPLE=air-gapped`).

    python -m ragfr_tools.chart_render RELEASE NAMESPACE VALUES.yaml [VALUES.yaml ...]

Prints the objects as one YAML stream (NOTES.txt left out). One line on stderr and exit 2 for a values file that
does not exist, exit 1 when the chart refuses the values (its own sentence); nothing else is printed then.
"""

from __future__ import annotations

import sys
from collections.abc import Sequence
from pathlib import Path

from ragfr_tools.deploy import load_values

CHART = Path(__file__).resolve().parents[2] / "charts" / "ragfr"


def main(argv: Sequence[str] | None = None) -> int:
    args = list(sys.argv[1:] if argv is None else argv)
    if len(args) < 3:
        print(__doc__, file=sys.stderr)
        return 2
    release, namespace, *files = args
    for f in files:
        if not Path(f).is_file():
            print(f"chart-render: values file not found: {f}", file=sys.stderr)
            return 2
    import helm_python as helm  # 244 MB Go library: loaded only once the arguments are known good

    try:
        out = helm.Chart.load(CHART).render(load_values(files), name=release, namespace=namespace)
    except helm.HelmError as exc:
        lines = str(exc).strip().splitlines()
        print(f"chart-render: the chart refuses {' + '.join(files)}: {lines[-1] if lines else exc}", file=sys.stderr)
        return 1
    print("\n---\n".join(t for k, t in sorted(out.items()) if not k.endswith("NOTES.txt") and t.strip()))
    return 0


if __name__ == "__main__":
    sys.exit(main())
