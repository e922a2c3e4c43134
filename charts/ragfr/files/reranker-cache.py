"""Make Open WebUI's cross-encoder loadable OFFLINE before Open WebUI starts.

Open WebUI, unable to load RAG_RERANKING_MODEL, only logs "CrossEncoder error" and serves without a
reranker; this init container fails the pod instead. It resolves the model exactly as Open WebUI 0.12.4
does (retrieval/utils.py get_model_path: huggingface_hub.snapshot_download into SENTENCE_TRANSFORMERS_HOME,
names without "/" under sentence-transformers/, no revision, i.e. the cache's refs/main), downloads it first
when RERANKER_SOURCE=download, then proves an offline load in a fresh interpreter (huggingface_hub reads
HF_HUB_OFFLINE once, at import).

A download fetches the commit RERANKER_REVISION (openwebui.reranker.revision: a 40-hex commit sha, never a
branch, so what runs is what was reviewed) and points the cache's refs/main at it, which is what Open WebUI
resolves offline; the offline check then requires that commit. The download is skipped when the cache
already holds that commit and it loads offline (a persistent cache, openwebui.reranker.cache: a restart
does not download again); the same commit check applies.
"""

import os
import re
import subprocess
import sys
from pathlib import Path

COMMIT = re.compile(r"[0-9a-f]{40}")

RESOLVE_AND_LOAD = """
import os
from huggingface_hub import snapshot_download
repo, cache = os.environ["RERANKER_REPO"], os.environ["SENTENCE_TRANSFORMERS_HOME"]
if os.environ["HF_HUB_OFFLINE"] == "1":
    path = snapshot_download(repo_id=repo, cache_dir=cache, local_files_only=True)
    from sentence_transformers import CrossEncoder
    CrossEncoder(path, device="cpu")
    print(os.path.basename(os.path.normpath(path)))
else:
    snapshot_download(repo_id=repo, cache_dir=cache, revision=os.environ["RERANKER_REVISION"])
"""


def repo_id(name: str) -> str:
    """Open WebUI's repo id for RAG_RERANKING_MODEL (short names are sentence-transformers')."""
    return name if "/" in name else "sentence-transformers/" + name


def checked_revision(source: str | None, revision: str) -> str:
    """The commit to download; exits naming the value to set when a download has no commit sha."""
    if source == "download" and not COMMIT.fullmatch(revision):
        sys.exit(f"reranker-cache: RERANKER_REVISION={revision!r} is not a commit sha (40 lowercase hex digits): "
                 f"set openwebui.reranker.revision to the commit of {os.environ['RAG_RERANKING_MODEL']} to "
                 "download (docs/reference/reranker.md, 'The reranker')")
    return revision


def pin_main(cache: str, repo: str, revision: str) -> None:
    """Point the cache's refs/main at the downloaded commit: Open WebUI resolves refs/main offline."""
    ref = Path(cache) / f"models--{repo.replace('/', '--')}" / "refs" / "main"
    ref.parent.mkdir(parents=True, exist_ok=True)
    ref.write_text(revision)


def snapshot_present(cache: str, repo: str, revision: str) -> bool:
    """The pinned commit is already in the cache: a persistent cache (openwebui.reranker.cache) after the first
    start. The offline load that follows proves it complete; an incomplete one is downloaded again."""
    return (Path(cache) / f"models--{repo.replace('/', '--')}" / "snapshots" / revision).is_dir()


def run(offline: bool, repo: str, fail: bool = True) -> str | None:
    flag = "1" if offline else "0"
    env = dict(os.environ, HF_HUB_OFFLINE=flag, TRANSFORMERS_OFFLINE=flag, RERANKER_REPO=repo)
    done = subprocess.run([sys.executable, "-c", RESOLVE_AND_LOAD], env=env, capture_output=True, text=True)
    if done.returncode != 0 and not fail:
        return None
    if done.returncode != 0:
        last = (done.stderr.strip().splitlines() or ["no output"])[-1]
        how = "offline from" if offline else f"at {os.environ.get('RERANKER_REVISION')} from Hugging Face into"
        sys.exit(f"reranker-cache: cannot load {os.environ['RAG_RERANKING_MODEL']} {how} "
                 f"{os.environ['SENTENCE_TRANSFORMERS_HOME']}: {last}")
    return (done.stdout.strip().splitlines() or [""])[-1]


def main() -> None:
    source, name = os.environ.get("RERANKER_SOURCE"), os.environ["RAG_RERANKING_MODEL"]
    cache, repo = os.environ["SENTENCE_TRANSFORMERS_HOME"], repo_id(name)
    revision = checked_revision(source, os.environ.get("RERANKER_REVISION", ""))
    commit = None
    if source == "download" and snapshot_present(cache, repo, revision):
        pin_main(cache, repo, revision)
        commit = run(offline=True, repo=repo, fail=False)
        print(f"reranker-cache: {name} at {revision} already in {cache}: "
              + ("no download" if commit is not None else "incomplete, downloading it again"))
    if source == "download" and commit is None:
        run(offline=False, repo=repo)
        pin_main(cache, repo, revision)
    if commit is None:
        commit = run(offline=True, repo=repo)
    if source == "download" and commit != revision:
        sys.exit(f"reranker-cache: {name} resolves offline to commit {commit}, not the pinned {revision}")
    print(f"reranker-cache: {name} loads offline from {cache} (commit {commit})")


if __name__ == "__main__":
    main()
