#!/usr/bin/env bash
# Creates/updates the project venv (.venv): torch first, the CPU build when PyTorch's CPU index answers
# (scripts/install-torch.sh; installing it first keeps sentence-transformers from choosing its own torch),
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
key="$( { sha256sum "$ROOT/pyproject.toml" "$ROOT/tools/pyproject.toml" "$ROOT/scripts/install-torch.sh"; "$PYTHON" -VV; echo "$TORCH_SPEC $EXTRAS"; } | sha256sum | cut -c1-16)"
stamp="$VENV/.ragfr-setup-$key"
if [[ -f "$stamp" && -x "$VENV/bin/python" ]]; then
  echo "setup-venv: up to date ($VENV, stamp $key)"
  exit 0
fi
[[ -x "$VENV/bin/python" ]] || "$PYTHON" -m venv "$VENV"
pip=("$VENV/bin/python" -m pip install --disable-pip-version-check -q)
bash "$ROOT/scripts/install-torch.sh" "$VENV/bin/python" "$TORCH_SPEC" setup-venv
"${pip[@]}" -e "$ROOT[$EXTRAS]"
# The repository tools (benchmarks, build helpers, test double): a second distribution, never in the product.
"${pip[@]}" -e "$ROOT/tools"
"$VENV/bin/python" -c 'import ragfr, torch' >/dev/null
rm -f "$VENV"/.ragfr-setup-*
touch "$stamp"
echo "setup-venv: ready ($VENV)"
