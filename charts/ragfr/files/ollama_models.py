"""Are the models this release names in Ollama, each by its exact name:tag? Standard library only: it runs in
the stock Open WebUI image (its readiness probe) and in the ragfr image (`helm test`, which imports `missing`).

    python ollama_models.py --url http://ragfr-ollama:11434 [--passed-file F] bge-m3:567m qwen2.5:3b

Prints one line and exits 0 when Ollama's /api/tags lists every model, 1 naming the missing ones (and what
Ollama holds), 2 when Ollama does not answer. A name without a tag means ":latest", as for Ollama itself;
"bge-m3:567m" is never satisfied by "bge-m3:latest" or another tag of bge-m3.

--passed-file: once every model was found, write the list there and answer from it afterwards without asking
Ollama. The readiness probe uses it so that a pod turns Ready only once the models are there, and then does not
leave its Service (every user sees a 503) because Ollama restarts or an external Ollama blinks; a later loss of
a model is `helm test`'s to report.
"""

from __future__ import annotations

import argparse
import json
import sys
import urllib.error
import urllib.request
from collections.abc import Sequence

TIMEOUT_S = 5
LIBRARY = "registry.ollama.ai/library/"


def canonical(name: str) -> str:
    """The name as Ollama's /api/tags shows it: the default registry and namespace dropped, the tag always there."""
    name = name.strip()
    name = name[len(LIBRARY):] if name.startswith(LIBRARY) else name
    return name if ":" in name.rsplit("/", 1)[-1] else f"{name}:latest"


def listed(url: str) -> list[str]:
    """The names Ollama at `url` lists (GET /api/tags)."""
    with urllib.request.urlopen(url.rstrip("/") + "/api/tags", timeout=TIMEOUT_S) as response:
        body = json.loads(response.read())
    return sorted(str(m.get("name") or m.get("model")) for m in body.get("models") or [])


def missing(url: str, wanted: Sequence[str]) -> tuple[list[str], list[str]]:
    """(the wanted models Ollama lacks, what it lists); raises OSError when Ollama does not answer."""
    present = listed(url)
    have = {canonical(n) for n in present}
    return [w for w in dict.fromkeys(canonical(w) for w in wanted if w.strip()) if w not in have], present


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="ollama_models.py", description=__doc__.split("\n\n")[0])
    parser.add_argument("--url", required=True, help="Ollama's base URL")
    parser.add_argument("--passed-file", default="", help="remember a pass here (the readiness probe's latch)")
    parser.add_argument("models", nargs="+", help="name:tag of each model the release names")
    args = parser.parse_args(argv)
    wanted = sorted({canonical(m) for m in args.models if m.strip()})
    record = " ".join(wanted) + "\n"
    if args.passed_file:
        try:
            with open(args.passed_file, encoding="utf-8") as f:
                if f.read() == record:
                    return 0
        except OSError:
            pass
    try:
        lacking, present = missing(args.url, wanted)
    except (OSError, ValueError) as exc:
        print(f"ollama-models: Ollama at {args.url} does not answer /api/tags: {exc}")
        return 2
    if lacking:
        print(f"ollama-models: Ollama at {args.url} lacks {', '.join(lacking)} "
              f"(it holds: {', '.join(present) or 'no model'}); pull them, or fill the model volume "
              "(docs/runbooks/ollama-models-offline.md)")
        return 1
    if args.passed_file:
        with open(args.passed_file, "w", encoding="utf-8") as f:
            f.write(record)
    print(f"ollama-models: Ollama at {args.url} holds {', '.join(wanted)}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
