"""`python -m ragfr_tools.devserver`: run the Ollama-API TEST DOUBLE (see ragfr_tools.devserver)."""

from __future__ import annotations

import argparse
import logging
import sys
from collections.abc import Sequence
from pathlib import Path

from ragfr.errors import RagfrError

DEFAULT_EMBEDDER = "local:multilingual-e5-small"


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="python -m ragfr_tools.devserver",
        description="A TEST DOUBLE of the Ollama API for tests and `make up` without Ollama: real offline "
        "embeddings (/api/embed, /api/embeddings), extractive chat (/api/chat: the context sentence sharing "
        "most French lexemes with the question). It is not a language model.",
        epilog="example: python -m ragfr_tools.devserver --port 11434   then OLLAMA_BASE_URL=http://127.0.0.1:11434",
    )
    parser.add_argument("--host", default="127.0.0.1", help="address to bind (default 127.0.0.1: loopback only)")
    parser.add_argument("--port", type=int, default=11434, help="port (default 11434, Ollama's; 0 picks a free one)")
    parser.add_argument(
        "--embedder", default=DEFAULT_EMBEDDER, help=f"ragfr embedder spec (default {DEFAULT_EMBEDDER})"
    )
    parser.add_argument(
        "--embedding-model-name",
        default="multilingual-e5-small-test-double",
        help="model name the double answers to on /api/embed (set RAG_EMBEDDING_MODEL to it)",
    )
    parser.add_argument("--port-file", help="write the bound port to this file once listening (for --port 0)")
    parser.add_argument(
        "--models-dir",
        help="an Ollama model directory (manifests/, blobs/): hold exactly the models it has, by name:tag, as "
        "Ollama would (default: the chat model and --embedding-model-name only)",
    )
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    logging.basicConfig(level=logging.INFO, format="%(levelname)s %(name)s: %(message)s", stream=sys.stderr)
    try:
        from ragfr.embed import load_embedder
        from ragfr_tools.devserver.server import BANNER, make_server

        # No cache, persistent or in memory: Ollama has none, and a cached double would make every repeated
        # question and re-uploaded document free, hiding what embeddings cost under load (make load).
        if args.models_dir is not None and not args.models_dir.strip():
            raise RagfrError("--models-dir is empty (an unset OLLAMA_MODELS?)")
        embedder = load_embedder(args.embedder, cache=False, query_cache_size=0)
        models_dir = Path(args.models_dir) if args.models_dir else None
        server = make_server(args.host, args.port, embedder, args.embedding_model_name, models_dir)
    except (RagfrError, OSError) as err:
        print(f"ragfr devserver: error: {err}", file=sys.stderr)
        return 2
    host, port = str(server.server_address[0]), int(server.server_address[1])
    url = f"http://{host}:{port}"
    print(BANNER.format(url=url, embedder=embedder.model_id, dims=embedder.dims, model=args.embedding_model_name),
          file=sys.stderr, flush=True)
    if args.port_file:
        with open(args.port_file, "w", encoding="utf-8") as out:
            out.write(f"{port}\n")
    try:
        server.serve_forever()
    except KeyboardInterrupt:
        pass
    finally:
        server.server_close()
    return 0


if __name__ == "__main__":
    sys.exit(main())
