#!/usr/bin/env bash
# Installs torch into a venv, preferring the CPU build, and never fails because only a CUDA build was found.
#   install-torch.sh VENV_PYTHON TORCH_SPEC TAG
#   1. PyTorch's own CPU wheel index ($TORCH_CPU_INDEX, default https://download.pytorch.org/whl/cpu), when it
#      answers within 10 s: the CPU build (about 0.7 GB of torch; the Open WebUI venv is about 3 GB).
#   2. Otherwise pip's default sources. On a plain Debian 12 machine that is PyPI, whose Linux x86-64 torch is
#      the CUDA build (nvidia-* wheels: an ESTIMATED 7.4 GB Open WebUI venv; it still runs on the CPU). pip's
#      find-links may hold a CPU wheel instead (the project's build machine has one in /opt/wheels).
# Prints one line saying which build it got and why. Exit status is pip's: only a failed install fails.
set -euo pipefail
python="${1:?usage: install-torch.sh VENV_PYTHON TORCH_SPEC TAG}"; spec="${2:?}"; tag="${3:-install-torch}"
index="${TORCH_CPU_INDEX:-https://download.pytorch.org/whl/cpu}"
# torch's own dependencies come from the CPU index too; PyPI stays reachable for anything it lacks.
extra="${TORCH_EXTRA_INDEX-https://pypi.org/simple}"
pip=("$python" -m pip install --disable-pip-version-check -q)

# One quick probe instead of pip's retries: an unreachable index must cost seconds, not minutes.
if why="$("$python" - "$index" <<'PY'
import sys
import urllib.request

try:
    urllib.request.urlopen(sys.argv[1].rstrip("/") + "/torch/", timeout=10).close()
except Exception as exc:  # any failure means "fall back"; the reason goes into the one-line report
    print(f"{type(exc).__name__}: {exc}"[:160])
    sys.exit(1)
PY
)"; then
  if "${pip[@]}" --timeout 30 --retries 1 --index-url "$index" ${extra:+--extra-index-url "$extra"} "$spec"; then
    source="PyTorch's CPU index $index"
  else
    why="pip could not install $spec from it"; source=""
  fi
else
  source=""
fi
if [[ -z "$source" ]]; then
  "${pip[@]}" "$spec"
  source="pip's default sources (PyTorch's CPU index $index unusable: $why)"
fi
build="$("$python" -c 'import torch; print(torch.__version__, "cuda" if torch.version.cuda else "cpu")')"
if [[ "$build" == *cuda ]]; then
  echo "$tag: torch ${build% *} is the CUDA build, from $source: several GB bigger (docs/reference/images.md gives the sizes), still correct on the CPU"
else
  echo "$tag: torch ${build% *} (CPU build) from $source"
fi
