"""The Ollama-API test double: real e5 embeddings behind Ollama's routes, extractive chat, loud labelling."""

from __future__ import annotations

import json
import threading
import urllib.error
import urllib.request
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from ragfr.embed import Embedder, load_embedder
from ragfr_tools.devserver.extractive import NO_ANSWER, answer
from ragfr_tools.devserver.server import CHAT_MODEL, make_server, store_files

EMBED = "e5-double"


@pytest.fixture(scope="module")
def embedder() -> Embedder:
    return load_embedder("local:multilingual-e5-small", cache=False)


@pytest.fixture(scope="module")
def url(embedder: Embedder) -> Iterator[str]:
    server = make_server("127.0.0.1", 0, embedder, EMBED)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    yield f"http://127.0.0.1:{server.server_address[1]}"
    server.shutdown()
    server.server_close()


def post(url: str, body: Any) -> tuple[int, dict[str, str], bytes]:
    req = urllib.request.Request(url, data=json.dumps(body).encode(), method="POST")
    try:
        with urllib.request.urlopen(req, timeout=60) as resp:
            return resp.status, dict(resp.headers), resp.read()
    except urllib.error.HTTPError as err:
        return err.code, dict(err.headers), err.read()


def test_labels_itself_a_test_double(url: str) -> None:
    with urllib.request.urlopen(url + "/api/tags") as resp:
        assert resp.headers["X-Ragfr-Test-Double"] == "1"
        names = [m["name"] for m in json.loads(resp.read())["models"]]
    assert names == [f"{CHAT_MODEL}:latest", f"{EMBED}:latest"]
    assert all("test-double" in n or n.startswith(EMBED) for n in names)
    with urllib.request.urlopen(url + "/api/version") as resp:
        assert "test-double" in json.loads(resp.read())["version"]


def test_embed_routes_prefixes_to_the_right_e5_side(url: str, embedder: Embedder) -> None:
    status, _, body = post(url + "/api/embed", {"model": f"{EMBED}:latest",
                                                "input": ["query: sinistres", "passage: Tout sinistre est déclaré."]})
    assert status == 200
    got = json.loads(body)["embeddings"]
    assert got[0] == pytest.approx(embedder.embed_queries(["sinistres"])[0], abs=1e-6)
    assert got[1] == pytest.approx(embedder.embed_passages(["Tout sinistre est déclaré."])[0], abs=1e-6)
    assert got[0] != pytest.approx(embedder.embed_passages(["sinistres"])[0], abs=1e-6)
    status, _, body = post(url + "/api/embeddings", {"model": EMBED, "prompt": "passage: vol"})
    assert status == 200 and len(json.loads(body)["embedding"]) == embedder.dims


def test_unknown_model_and_bad_body_are_refused(url: str) -> None:
    status, _, body = post(url + "/api/embed", {"model": "bge-m3", "input": ["x"]})
    assert status == 404 and "bge-m3" in json.loads(body)["error"]
    req = urllib.request.Request(url + "/api/chat", data=b"{not json", method="POST")
    with pytest.raises(urllib.error.HTTPError) as err:
        urllib.request.urlopen(req, timeout=10)
    assert err.value.code == 400


CONTEXT = (
    '<context><source id="1" name="cg.txt">Le vol de bijoux est exclu. Tout sinistre doit être déclaré sous '
    'cinq jours.</source><source id="2" name="b.txt">La franchise est de 150 euros.</source></context>'
)


def test_chat_streams_ndjson_and_answers_extractively(url: str) -> None:
    messages = [{"role": "system", "content": CONTEXT}, {"role": "user", "content": "Délais pour mes sinistres ?"}]
    status, headers, body = post(url + "/api/chat", {"model": CHAT_MODEL, "messages": messages})
    assert status == 200 and headers["Content-Type"] == "application/x-ndjson"
    lines = [json.loads(line) for line in body.splitlines()]
    assert [line["done"] for line in lines] == [False, True]
    assert lines[0]["message"]["content"] == "Tout sinistre doit être déclaré sous cinq jours. [1]"
    status, _, body = post(url + "/api/chat", {"model": CHAT_MODEL, "messages": messages, "stream": False})
    assert json.loads(body)["message"]["content"].endswith("[1]")


def test_extractive_answer_reads_a_template_in_the_user_message() -> None:
    messages = [{"role": "user", "content": CONTEXT + "\nQuelle franchise ?"}]
    assert answer(messages) == "La franchise est de 150 euros. [2]"
    assert answer([{"role": "user", "content": "Quelle franchise ?"}]) == NO_ANSWER


def test_counts_the_requests_that_reach_the_model(url: str) -> None:
    """The count the gate tests rely on: every /api/chat and /api/generate request, even a refused one."""

    def counts() -> dict[str, int]:
        with urllib.request.urlopen(url + "/ragfr/requests", timeout=10) as resp:
            return dict(json.loads(resp.read()))

    before = counts()
    post(url + "/api/chat", {"model": CHAT_MODEL, "messages": [{"role": "user", "content": "Bonjour"}], "stream": False})
    post(url + "/api/chat", {"model": "no-such-model", "messages": []})
    post(url + "/api/generate", {"model": CHAT_MODEL, "prompt": "Bonjour", "stream": False})
    after = counts()
    assert after["chat"] - before["chat"] == 2 and after["generate"] - before["generate"] == 1
    assert after["embed"] == before["embed"]


def test_template_examples_of_source_tags_are_not_passages() -> None:
    """Open WebUI's RAG template spells `<source id="1">` in its instructions, before <context>: only the
    context's sources are passages (else the reply cited nothing)."""
    template = ('Cite [id] only when the <source> tag has an id (e.g., <source id="1">).\n<context>\n'
                '<source id="1" name="c.txt">Le vol est déclaré sous deux jours.</source>\n</context>\n')
    assert answer([{"role": "user", "content": template + "Délai pour déclarer un vol ?"}]) == (
        "Le vol est déclaré sous deux jours. [1]")


def test_a_model_store_is_listed_and_served_as_ollama_names_it(embedder: Embedder, tmp_path: Path) -> None:
    """With a model directory the double holds exactly its models, named as Ollama's /api/tags names them
    (name:tag, the tag always there, the default registry and namespace dropped), read at each request."""
    store = tmp_path / "models"
    server = make_server("127.0.0.1", 0, embedder, "bge-m3:567m", store)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    url = f"http://127.0.0.1:{server.server_address[1]}"

    def names() -> list[str]:
        with urllib.request.urlopen(url + "/api/tags") as resp:
            return [m["name"] for m in json.loads(resp.read())["models"]]

    try:
        assert names() == []  # no directory yet: an empty store
        files = store_files(["bge-m3:latest", "qwen2.5:3b", "hf.co/org/model:Q4_K_M", "me/mine"])
        for rel, body in files.items():
            (tmp_path / rel).parent.mkdir(parents=True, exist_ok=True)
            (tmp_path / rel).write_bytes(body)
        assert sorted(names()) == ["bge-m3:latest", "hf.co/org/model:Q4_K_M", "me/mine:latest", "qwen2.5:3b"]
        # Another tag of the embedding model is not the embedding model.
        assert post(url + "/api/embed", {"model": "bge-m3:567m", "input": ["x"]})[0] == 404
        assert post(url + "/api/chat", {"model": "qwen2.5:3b", "stream": False,
                                        "messages": [{"role": "user", "content": "bonjour"}]})[0] == 200
        assert post(url + "/api/chat", {"model": "qwen2.5", "messages": []})[0] == 404  # qwen2.5:latest
        # A manifest whose config blob is missing is skipped, as by Ollama.
        [config] = [rel for rel in files if rel.startswith("models/blobs/")][:1]
        (tmp_path / config).unlink()
        assert "bge-m3:latest" not in names()
    finally:
        server.shutdown()
        server.server_close()
