"""`ragfr gate check` (issue 38 item 5) on the real database with the real offline e5 embedder: one JSON line
per question with the decision `ragfr ask` takes, its rule and the hits as `ragfr search --json` prints them;
the embedder is loaded once for the whole file."""

from __future__ import annotations

import io
import json

import psycopg
import pytest

import ragfr.embed
from ragfr.cli import main as cli_main
from ragfr.embed import load_embedder
from ragfr.ingest import ChunkConfig, Document, ingest_documents

E5 = "local:multilingual-e5-small"
DOCS = {
    "franchise": "Article 8 - Franchise. Une franchise de 150 euros reste à la charge de l'assuré pour chaque "
    "dommage indemnisé, sauf catastrophe naturelle.",
    "resiliation": "Article 15 - Résiliation. Le contrat peut être résilié chaque année à l'échéance avec un "
    "préavis de deux mois.",
    "vol": "Article 9 - Vol. En cas de vol, la plainte doit être déposée dans les 48 heures auprès des autorités.",
}


@pytest.fixture
def kb(migrated_db):
    dsn = migrated_db(dims=384, model=E5)
    with psycopg.connect(dsn, autocommit=True) as conn:
        docs = [Document(text=t, source=f"{name}.txt", metadata={"produit": "habitation"}) for name, t in DOCS.items()]
        ingest_documents(conn, "contrat", docs, load_embedder(E5, cache=False), ChunkConfig(size=1000, overlap=0),
                         progress=False)
    return dsn


def test_gate_check_prints_one_decision_per_question_with_one_embedder_load(kb, capsys, monkeypatch) -> None:
    loads = []
    real = ragfr.embed.load_embedder
    monkeypatch.setattr(ragfr.embed, "load_embedder", lambda *a, **kw: loads.append(a) or real(*a, **kw))
    lines = [{"id": "in", "text": "Dans quel délai porter plainte après un vol ?"},
             {"id": 7, "text": "Quelle est la recette de la tarte tatin aux pommes ?"}]
    monkeypatch.setattr("sys.stdin", io.StringIO("".join(json.dumps(x) + "\n" for x in lines) + "\n"))
    assert cli_main(["gate", "check", "--dsn", kb, "--collection", "contrat", "--questions", "-"]) == 0
    out = [json.loads(line) for line in capsys.readouterr().out.splitlines()]
    assert [o["id"] for o in out] == ["in", 7] and len(loads) == 1
    for o in out:
        assert o["decision"] in ("answer", "caution", "refuse") and o["rule"] in ("evidence", "rank") and o["reason"]
        assert {"id", "text", "metadata", "rrf_score", "lexical_rank", "semantic_score"} <= set(o["hits"][0])
    assert out[0]["decision"] != "refuse" and "48 heures" in out[0]["hits"][0]["text"]
    assert out[0]["hits"][0]["metadata"]["produit"] == "habitation"
    assert out[1]["decision"] == "refuse"


def test_gate_check_names_a_malformed_line(kb, tmp_path, capsys) -> None:
    questions = tmp_path / "q.jsonl"
    questions.write_text('{"id": 1, "text": "vol"}\n{"text": "sans id"}\n', encoding="utf-8")
    assert cli_main(["gate", "check", "--dsn", kb, "--collection", "contrat", "--questions", str(questions)]) == 2
    captured = capsys.readouterr()
    assert "--questions line 2" in captured.err and len(captured.out.splitlines()) == 1
