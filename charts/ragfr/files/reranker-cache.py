"""Make Open WebUI's cross-encoder loadable OFFLINE before Open WebUI starts.

Open WebUI, unable to load RAG_RERANKING_MODEL, only logs "CrossEncoder error" and serves without a
reranker; this init container fails the pod instead. With RERANKER_SOURCE=download it first fetches
the model into HF_HOME; for every source it then proves an offline load in a fresh interpreter, because
huggingface_hub reads HF_HUB_OFFLINE once, at import.
"""

import os
import subprocess
import sys

LOAD = "import os; from sentence_transformers import CrossEncoder; CrossEncoder(os.environ['RAG_RERANKING_MODEL'], device='cpu')"


def load(offline: bool) -> None:
    env = dict(os.environ, HF_HUB_OFFLINE="1" if offline else "0", TRANSFORMERS_OFFLINE="1" if offline else "0")
    done = subprocess.run([sys.executable, "-c", LOAD], env=env, capture_output=True, text=True)
    if done.returncode != 0:
        last = (done.stderr.strip().splitlines() or ["no output"])[-1]
        mode = "offline" if offline else "from Hugging Face"
        sys.exit(f"reranker-cache: cannot load {os.environ['RAG_RERANKING_MODEL']} {mode} into {os.environ['HF_HOME']}: {last}")


def main() -> None:
    if os.environ.get("RERANKER_SOURCE") == "download":
        load(offline=False)
    load(offline=True)
    print(f"reranker-cache: {os.environ['RAG_RERANKING_MODEL']} loads offline from {os.environ['HF_HOME']}")


if __name__ == "__main__":
    main()
