"""Make Open WebUI's cross-encoder loadable OFFLINE before Open WebUI starts.

Open WebUI, unable to load RAG_RERANKING_MODEL, only logs "CrossEncoder error" and serves without a
reranker; this init container fails the pod instead. It resolves the model exactly as Open WebUI 0.12.4
does (retrieval/utils.py get_model_path: huggingface_hub.snapshot_download into SENTENCE_TRANSFORMERS_HOME,
names without "/" under sentence-transformers/), downloads it first when RERANKER_SOURCE=download, then
proves an offline load in a fresh interpreter (huggingface_hub reads HF_HUB_OFFLINE once, at import).
"""

import os
import subprocess
import sys

RESOLVE_AND_LOAD = """
import os, sys
from huggingface_hub import snapshot_download
name = os.environ["RAG_RERANKING_MODEL"]
repo = name if "/" in name else "sentence-transformers/" + name
offline = os.environ["HF_HUB_OFFLINE"] == "1"
path = snapshot_download(repo_id=repo, cache_dir=os.environ["SENTENCE_TRANSFORMERS_HOME"], local_files_only=offline)
if offline:
    from sentence_transformers import CrossEncoder
    CrossEncoder(path, device="cpu")
"""


def run(offline: bool) -> None:
    flag = "1" if offline else "0"
    env = dict(os.environ, HF_HUB_OFFLINE=flag, TRANSFORMERS_OFFLINE=flag)
    done = subprocess.run([sys.executable, "-c", RESOLVE_AND_LOAD], env=env, capture_output=True, text=True)
    if done.returncode != 0:
        last = (done.stderr.strip().splitlines() or ["no output"])[-1]
        how = "offline from" if offline else "from Hugging Face into"
        sys.exit(f"reranker-cache: cannot load {os.environ['RAG_RERANKING_MODEL']} {how} "
                 f"{os.environ['SENTENCE_TRANSFORMERS_HOME']}: {last}")


def main() -> None:
    if os.environ.get("RERANKER_SOURCE") == "download":
        run(offline=False)
    run(offline=True)
    print(f"reranker-cache: {os.environ['RAG_RERANKING_MODEL']} loads offline "
          f"from {os.environ['SENTENCE_TRANSFORMERS_HOME']}")


if __name__ == "__main__":
    main()
