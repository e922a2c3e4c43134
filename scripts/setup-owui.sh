#!/usr/bin/env bash
# Creates .venv-owui: the REAL open-webui 0.12.4 from PyPI, used by the tests of the Open WebUI patch and
# by `make up`. Separate from .venv because Open WebUI pins its own versions of many shared packages.
#   1. torch==2.13.0 first (scripts/install-torch.sh): the CPU build from PyTorch's CPU index when it answers,
#      else pip's default, said in one line. open-webui's range (torch>=2) is then met, so pip adds no other
#      torch. Sizes (docs/reference/images.md): CPU torch -> about 3 GB venv; PyPI's CUDA torch (a plain Debian 12
#      machine with no CPU index) -> an estimated 7.4 GB venv, still correct on the CPU. Never a failure.
#   2. open-webui[postgres]==0.12.4 (the extra brings pgvector + psycopg2, as the stock image has them).
#   3. .venv-owui/ragfr-site: what the owui-init image copies into the pod (images/owui-init/site-requirements.txt,
#      --no-deps --target); ragfr itself comes from src/ on PYTHONPATH, exactly like /opt/ragfr/site in the pod.
# Skips everything when a stamp keyed on this script, the requirements and the Python version exists.
set -euo pipefail
# shellcheck source=scripts/lib.sh
source "$(dirname "$0")/lib.sh"
VENV="${OWUI_VENV:-$ROOT/.venv-owui}"
PYTHON="${PYTHON:-python3}"
OWUI_SPEC="open-webui[postgres]==0.12.4"
TORCH_SPEC="torch==2.13.0"
SITE_REQS="$ROOT/images/owui-init/site-requirements.txt"

key="$( { sha256sum "$0" "$SITE_REQS" "$ROOT/scripts/install-torch.sh"; "$PYTHON" -VV; } | sha256sum | cut -c1-16)"
stamp="$VENV/.ragfr-owui-$key"
if [[ -f "$stamp" && -x "$VENV/bin/python" ]]; then
  echo "setup-owui: up to date ($VENV, stamp $key)"
  exit 0
fi
start=$SECONDS
[[ -x "$VENV/bin/python" ]] || "$PYTHON" -m venv "$VENV"
pip=("$VENV/bin/python" -m pip install --disable-pip-version-check -q)
echo "setup-owui: [1/3] $TORCH_SPEC (CPU build preferred)"
bash "$ROOT/scripts/install-torch.sh" "$VENV/bin/python" "$TORCH_SPEC" setup-owui
echo "setup-owui: [2/3] $OWUI_SPEC (about 2 minutes, 3 GB)"
"${pip[@]}" "$OWUI_SPEC"
echo "setup-owui: [3/3] ragfr's runtime extras for Open WebUI -> $VENV/ragfr-site"
rm -rf "$VENV/ragfr-site"
"${pip[@]}" --no-deps --target "$VENV/ragfr-site" -r "$SITE_REQS"

tv="$("$VENV/bin/python" -c 'import torch; print(torch.__version__, "cuda" if torch.version.cuda else "cpu")')"
rm -f "$VENV"/.ragfr-owui-*
touch "$stamp"
echo "setup-owui: ready ($VENV, torch $tv, $(du -sh "$VENV" | cut -f1), $((SECONDS - start)) s)"
