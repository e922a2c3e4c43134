"""Apply the French retrieval patch to a copy of Open WebUI's backend and record a marker.

Runs in the owui-init image. PATCH_TARGET holds the pristine open_webui/ package copied from the stock
image by the previous init container. The patcher (PATCH_APPLY, from patches/open-webui) must change
every file in PATCH_FILES; any refusal or unchanged file fails the pod here, at init, with one line.
The marker (open_webui/static/ragfr-patch.json) lists the pristine and patched hashes; Open WebUI
serves its static dir, so `helm test` reads it from the running pod.
"""

import hashlib
import json
import os
import shlex
import shutil
import subprocess
import sys
from pathlib import Path


def sha256(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def main() -> None:
    target = Path(os.environ["PATCH_TARGET"])
    files = os.environ["PATCH_FILES"].split()
    missing = [f for f in files if not (target / f).is_file()]
    if missing:
        sys.exit(f"apply-patch: not in the stock Open WebUI image: {', '.join(missing)}")
    pristine = {f: sha256(target / f) for f in files}

    command = [*shlex.split(os.environ["PATCH_APPLY"]), "--target", str(target)]
    done = subprocess.run(command, capture_output=True, text=True)
    sys.stdout.write(done.stdout)
    sys.stderr.write(done.stderr)
    if done.returncode != 0:
        sys.exit(f"apply-patch: the patcher refused (exit {done.returncode}): {shlex.join(command)}")

    patched = {f: sha256(target / f) for f in files}
    unchanged = [f for f in files if patched[f] == pristine[f]]
    if unchanged:
        sys.exit(f"apply-patch: the patcher left these files unchanged: {', '.join(unchanged)}")

    marker = {
        "openwebui_version": os.environ.get("OPENWEBUI_VERSION", ""),
        "files": {f: {"pristine_sha256": pristine[f], "patched_sha256": patched[f]} for f in files},
    }
    (target / "open_webui" / "static").mkdir(parents=True, exist_ok=True)
    (target / "open_webui" / "static" / "ragfr-patch.json").write_text(json.dumps(marker, indent=2))

    site_src, site_dst = Path(os.environ["SITE_SOURCE"]), Path(os.environ["SITE_TARGET"])
    if not site_src.is_dir():
        sys.exit(f"apply-patch: {site_src} (ragfr + nltk for Open WebUI) is missing from the owui-init image")
    # Entry by entry: copytree(site_src, site_dst) would also copy the source's mode and times onto site_dst,
    # the emptyDir itself, which belongs to root (mode 0777) and so refuses that to this non-root user.
    for entry in site_src.iterdir():
        if entry.is_dir():
            shutil.copytree(entry, site_dst / entry.name, dirs_exist_ok=True)
        else:
            shutil.copy2(entry, site_dst / entry.name)
    print(f"apply-patch: patched {len(files)} files, marker written, site copied to {site_dst}")


if __name__ == "__main__":
    main()
