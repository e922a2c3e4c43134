#!/usr/bin/env bash
# Creates/updates the project venv (.venv): torch's CPU wheel first (pip's find-links on this kind of machine
# holds torch 2.13.0+cpu; installing it first keeps sentence-transformers from pulling a multi-GB CUDA build),
# then the package in editable mode with every extra, then the repository tools (tools/, editable). Skips when a stamp keyed on pyproject.toml's hash and
# the Python version exists. Env: VENV (default .venv), PYTHON (default python3).
set -euo pipefail
# shellcheck source=scripts/lib.sh
source "$(dirname "$0")/lib.sh"
VENV="${VENV:-$ROOT/.venv}"
PYTHON="${PYTHON:-python3}"
TORCH_SPEC="torch==2.13.0"
EXTRAS="local,rerank,k8s,dev"

command -v "$PYTHON" >/dev/null || { echo "setup-venv: $PYTHON not found" >&2; exit 1; }
key="$( { sha256sum "$ROOT/pyproject.toml" "$ROOT/tools/pyproject.toml"; "$PYTHON" -VV; echo "$TORCH_SPEC $EXTRAS"; } | sha256sum | cut -c1-16)"
stamp="$VENV/.ragfr-setup-$key"
if [[ -f "$stamp" && -x "$VENV/bin/python" ]]; then
  echo "setup-venv: up to date ($VENV, stamp $key)"
  exit 0
fi
[[ -x "$VENV/bin/python" ]] || "$PYTHON" -m venv "$VENV"
pip=("$VENV/bin/python" -m pip install --disable-pip-version-check -q)
"${pip[@]}" "$TORCH_SPEC"
"${pip[@]}" -e "$ROOT[$EXTRAS]"
# The repository tools (benchmarks, build helpers, test double): a second distribution, never in the product.
"${pip[@]}" -e "$ROOT/tools"
tv="$("$VENV/bin/python" -c 'import ragfr, torch; print(torch.__version__)')"
[[ "$tv" == *+cpu ]] || echo "setup-venv: warning: torch $tv is not the CPU build (no local CPU wheel found)" >&2
rm -f "$VENV"/.ragfr-setup-*
touch "$stamp"
echo "setup-venv: ready ($VENV)"
