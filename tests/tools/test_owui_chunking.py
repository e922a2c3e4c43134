"""Open WebUI's chunking as an evaluation option: the real splitter of .venv-owui, the settings file's sizes."""

from __future__ import annotations

import pytest
from tests.support.paths import REPO

from ragfr.eval.beir import load_dataset
from ragfr.eval.corpus import collection_name
from ragfr.ingest.chunking import ChunkConfig
from ragfr_tools.eval.owui_chunking import OpenWebUISplitter, settings_chunking
from ragfr_tools.eval.owui_native import owui_python


def test_sizes_come_from_the_settings_file() -> None:
    assert settings_chunking() == ChunkConfig(size=1000, overlap=100)


def test_open_webui_splitter_cuts_like_an_upload(late_setup: None) -> None:
    if not owui_python().exists():
        pytest.skip("no .venv-owui: `make owui-venv` (make test builds it)")
    text = "# Titre\n\n" + " ".join(f"Phrase numéro {i} du contrat." for i in range(120)) + "\n\n## Annexe\n\nFin."
    chunks = OpenWebUISplitter(ChunkConfig(size=300, overlap=30)).chunker([text])(text)
    assert len(chunks) > 5 and all(len(c.text) <= 300 for c in chunks)
    # The header splitter rewrites line breaks; the words are the document's, in order.
    flat = " ".join(text.split())
    assert all(" ".join(c.text.split()) in flat for c in chunks)
    assert chunks[-1].text.startswith("## Annexe")  # the header splitter cut before the second header


def test_its_collection_is_not_ragfr_chunkers() -> None:
    dataset = load_dataset(REPO / "eval" / "golden")
    ragfr = collection_name(dataset, "local:multilingual-e5-small", ChunkConfig())
    owui = collection_name(dataset, "local:multilingual-e5-small", ChunkConfig(), "open-webui")
    assert ragfr != owui and "open-webui" in owui
