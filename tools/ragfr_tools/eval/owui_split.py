"""Runs INSIDE .venv-owui: split texts exactly as Open WebUI 0.12.4 splits an uploaded document.

Usage: python owui_split.py < {"texts": [...], "chunk_size": N, "chunk_overlap": M}  > [[chunk, ...], ...]

The same LangChain splitters with the same parameters as `open_webui.routers.retrieval.save_docs_to_vector_db`
with its defaults (ENABLE_MARKDOWN_HEADER_TEXT_SPLITTER on, CHUNK_MIN_SIZE_TARGET 0, RAG_TEXT_SPLITTER
"character"): first MarkdownHeaderTextSplitter on the six header levels keeping the headers, then
RecursiveCharacterTextSplitter(chunk_size, chunk_overlap). The library calls are Open WebUI's own
dependencies (langchain_text_splitters from its venv), not a copy of them.
"""

from __future__ import annotations

import json
import sys

from langchain_text_splitters import MarkdownHeaderTextSplitter, RecursiveCharacterTextSplitter


def main() -> int:
    job = json.load(sys.stdin)
    headers = MarkdownHeaderTextSplitter(
        headers_to_split_on=[("#" * n, f"Header {n}") for n in range(1, 7)], strip_headers=False
    )
    chars = RecursiveCharacterTextSplitter(
        chunk_size=int(job["chunk_size"]), chunk_overlap=int(job["chunk_overlap"]), add_start_index=True
    )
    out = []
    for text in job["texts"]:
        pieces = [d.page_content for d in headers.split_text(text)]
        out.append([c for piece in pieces for c in chars.split_text(piece)])
    json.dump(out, sys.stdout, ensure_ascii=False)
    return 0


if __name__ == "__main__":
    sys.exit(main())
