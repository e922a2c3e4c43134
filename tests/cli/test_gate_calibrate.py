"""`ragfr gate calibrate` (issue 38 item 4) on the real database with the real offline e5 embedder and real
French questions (PIAF): it fits, prints the held-out rates and writes chart values that load back into the
gate (RAGFR_GATE_CALIBRATION) and that the chart renders into Open WebUI's environment. An embedding model
with no calibration (the offline USE model: none shipped) falls back to the rank rule and says so."""

from __future__ import annotations

import json
import logging
import random
from dataclasses import replace
from pathlib import Path
from typing import Any

import psycopg
import pytest
import yaml
from tests.support.chart import error_line, one, render
from tests.support.paths import PIAF_JSON

import ragfr.embed
from ragfr.cli import main as cli_main
from ragfr.embed import load_embedder
from ragfr.eval.piaf import load_piaf
from ragfr.gate import fitted
from ragfr.ingest import ChunkConfig, Document, ingest_documents

E5, USE = "local:multilingual-e5-small", "local:use-multilingual"
ARTICLES = 18  # half ingested (their questions are answerable), half not (their questions are not)


def _piaf_split() -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
    entries = sorted(load_piaf(PIAF_JSON)["data"], key=lambda a: a["title"])
    picked = random.Random(38).sample(entries, ARTICLES)
    return picked[: ARTICLES // 2], picked[ARTICLES // 2:]


def _file(article: dict[str, Any]) -> str:
    return f"{article['title'].replace('/', '-')}.txt"


def _ingest(dsn: str, model: str, articles: list[dict[str, Any]]) -> None:
    docs = [Document(text=p["context"], source=f"/uploads/{_file(a)}", doc_id=str(i), name=_file(a))
            for a in articles for i, p in enumerate(a["paragraphs"])]
    with psycopg.connect(dsn, autocommit=True) as conn:
        ingest_documents(conn, "wiki", docs, load_embedder(model, cache=False), ChunkConfig(), progress=False)


def _write(path: Path, items: list[dict[str, Any]]) -> Path:
    path.write_text("".join(json.dumps(x, ensure_ascii=False) + "\n" for x in items), encoding="utf-8")
    return path


@pytest.fixture(scope="module")
def piaf_questions(tmp_path_factory) -> tuple[list[dict[str, Any]], Path, Path]:
    held, other = _piaf_split()
    tmp = tmp_path_factory.mktemp("calibrate")
    answerable = [{"id": q["id"], "text": q["question"], "source": _file(a)}
                  for a in held for p in a["paragraphs"] for q in p["qas"]]
    unanswerable = [{"id": q["id"], "text": q["question"]} for a in other for p in a["paragraphs"] for q in p["qas"]]
    return held, _write(tmp / "answerable.jsonl", answerable), _write(tmp / "unanswerable.jsonl", unanswerable)


@pytest.fixture
def no_env_calibration(monkeypatch):
    monkeypatch.delenv(fitted.ENV, raising=False)


def test_calibrate_writes_values_that_the_gate_and_the_chart_take(migrated_db, piaf_questions, tmp_path, capsys,
                                                                   monkeypatch, no_env_calibration) -> None:
    held, answerable, unanswerable = piaf_questions
    dsn = migrated_db(dims=384, model=E5)
    _ingest(dsn, E5, held)
    loads = []
    real = ragfr.embed.load_embedder
    monkeypatch.setattr(ragfr.embed, "load_embedder", lambda *a, **kw: loads.append(a) or real(*a, **kw))
    out, js = tmp_path / "gate-values.yaml", tmp_path / "calibration.json"
    assert cli_main(["gate", "calibrate", "--dsn", dsn, "--collection", "wiki", "--answerable", str(answerable),
                     "--unanswerable", str(unanswerable), "--out", str(out), "--calibration-json", str(js)]) == 0
    printed = capsys.readouterr()
    assert len(loads) == 1
    assert "gate calibrate: searched" in printed.err  # progress lines, stderr not a terminal here
    assert "answerable (source top 3)" in printed.out and "unanswerable" in printed.out
    assert "gate in use" in printed.out  # e5 ships a fitted gate: the new one is printed beside it
    # The next step, as docs/runbooks/gate-calibration.md gives it: with -n, or helm looks in the default namespace.
    upgrade = "helm upgrade ragfr charts/ragfr -n ragfr -f my-values.yaml --wait --timeout 20m"
    assert printed.out.splitlines()[-2].endswith(f"into my-values.yaml, then {upgrade}")
    assert f"#   {upgrade}\n" in out.read_text(encoding="utf-8")
    values = yaml.safe_load(out.read_text(encoding="utf-8"))
    doc = values["openwebui"]["gate"]["calibration"]
    assert doc == json.loads(js.read_text(encoding="utf-8"))  # the YAML holds exactly the JSON document
    gate = fitted.from_json(doc, "values")
    assert gate.embedding_model == E5 and 0.0 <= gate.caution_at <= gate.answer_at <= 1.0
    test = doc["fitted"]["test"]
    # The fitted gate separates real answerable from real unanswerable questions on questions it never saw.
    assert test["answerable"]["evidence"]["n"] >= 20 and test["unanswerable"]["evidence"]["n"] >= 20
    assert test["answerable"]["evidence"]["refuse"] <= 0.2
    assert test["unanswerable"]["evidence"]["refuse"] >= 0.5
    assert test["answerable"]["now"]["n"] == test["answerable"]["evidence"]["n"]

    # The chart puts the values file, as written, into Open WebUI's environment, where the gate reads it.
    env = one(render(values), "ConfigMap", "-openwebui-env")["data"]
    assert replace(fitted.from_json(json.loads(env[fitted.ENV]), "values"), source="values") == gate

    # The values, loaded back through the variable the chart sets, decide `ragfr gate check`.
    monkeypatch.setenv(fitted.ENV, json.dumps(doc))
    questions = _write(tmp_path / "q.jsonl", [{"id": "a", "text": json.loads(answerable.read_text().splitlines()[0])
                                               ["text"]}])
    assert cli_main(["gate", "check", "--dsn", dsn, "--collection", "wiki", "--questions", str(questions)]) == 0
    printed = capsys.readouterr()
    assert f"fitted evidence gate from {fitted.ENV}" in printed.err.splitlines()[0]
    line, p = json.loads(printed.out), json.loads(printed.out)["probability"]
    assert line["rule"] == "evidence" and p is not None
    assert line["decision"] == ("answer" if p >= gate.answer_at else "caution" if p >= gate.caution_at else "refuse")

    # The trade-off is the operator's: stricter targets, recorded with the calibration and in its command. On
    # the same dev split, no unanswerable question answered puts the answer threshold above every unanswerable
    # one (never below the default 2 %'s), and no answerable refused the caution threshold at the lowest
    # answerable one (never above the default 2.5 % quantile).
    monkeypatch.delenv(fitted.ENV)
    strict = tmp_path / "strict.json"
    assert cli_main(["gate", "calibrate", "--dsn", dsn, "--collection", "wiki", "--answerable", str(answerable),
                     "--unanswerable", str(unanswerable), "--out", str(tmp_path / "strict.yaml"),
                     "--calibration-json", str(strict), "--not-refused", "1", "--unanswerable-answered", "0",
                     "--release", "rag-team", "--namespace", "team-a"]) == 0
    assert "then helm upgrade rag-team charts/ragfr -n team-a -f my-values.yaml --wait --timeout 20m" in \
        capsys.readouterr().out
    tight = json.loads(strict.read_text(encoding="utf-8"))
    assert tight["fitted"]["targets"] == {"not_refused": 1.0, "answered": 0.92, "negatives_answered": 0.0}
    assert doc["fitted"]["targets"] == {"not_refused": 0.975, "answered": 0.92, "negatives_answered": 0.02}
    assert "--not-refused 1.0 --unanswerable-answered 0.0" in tight["fitted"]["command"]
    assert tight["model"] == doc["model"]  # the same fit: only the cuts move
    assert tight["thresholds"]["answer_at"] >= doc["thresholds"]["answer_at"]
    assert tight["thresholds"]["caution_at"] <= doc["thresholds"]["caution_at"]


def test_the_chart_leaves_the_variable_out_by_default_and_rejects_a_calibration_without_thresholds() -> None:
    assert fitted.ENV not in one(render({}), "ConfigMap", "-openwebui-env")["data"]
    doc = json.loads((Path(fitted.__file__).parent / "models" / "local_multilingual-e5-small.json")
                     .read_text(encoding="utf-8"))
    del doc["thresholds"]
    assert "thresholds" in error_line({"openwebui": {"gate": {"calibration": doc}}})


def test_a_model_without_calibration_falls_back_to_the_model_free_gate_and_says_so(
        migrated_db, piaf_questions, tmp_path, capsys, caplog, monkeypatch) -> None:
    """USE has no coefficients of its own (the chart's bge-m3 case): the model-free gate decides, with three
    outcomes, and `ragfr gate check` says so on its first line and once in the log."""
    held, answerable, _ = piaf_questions
    dsn = migrated_db(dims=512, model=USE)
    _ingest(dsn, USE, held[:2])
    # A calibration for another model is set: it must not apply to this one.
    monkeypatch.setenv(fitted.ENV, (Path(fitted.__file__).parent / "models" /
                                           "local_multilingual-e5-small.json").as_posix())
    fitted._say_model_free.cache_clear()
    questions = _write(tmp_path / "q.jsonl", [json.loads(x) for x in answerable.read_text().splitlines()[:2]])
    with caplog.at_level(logging.INFO, logger="ragfr.gate"):
        assert cli_main(["gate", "check", "--dsn", dsn, "--collection", "wiki", "--questions", str(questions)]) == 0
    printed = capsys.readouterr()
    first = printed.err.splitlines()[0]
    assert "no gate fitted for it" in first and "model-free evidence gate from models/any-model.json" in first
    lines = [json.loads(x) for x in printed.out.splitlines()]
    assert len(lines) == 2 and all(x["rule"] == "evidence" and 0 <= x["probability"] <= 1 for x in lines)
    said = [r.getMessage() for r in caplog.records if "model-free gate" in r.getMessage()]
    assert len(said) == 1 and USE in said[0] and f"is for {E5}" in said[0]


@pytest.mark.parametrize("flag", ["--answered", "--not-refused", "--unanswerable-answered"])
def test_a_target_that_is_not_a_share_is_refused(flag, capsys) -> None:
    with pytest.raises(SystemExit) as exit_:
        cli_main(["gate", "calibrate", "--collection", "x", "--answerable", "a", "--unanswerable", "u", flag, "1.5"])
    assert exit_.value.code == 2 and "1.5 is not a share between 0 and 1" in capsys.readouterr().err


def test_the_help_states_the_targets_the_fit_uses_by_default(capsys) -> None:
    """The CLI does not import the fit (numpy) to print its help: its stated defaults are checked here."""
    from ragfr.gate.fitting import DEFAULT_TARGETS

    with pytest.raises(SystemExit):
        cli_main(["gate", "calibrate", "--help"])
    text = " ".join(capsys.readouterr().out.split())
    for value in (DEFAULT_TARGETS.not_refused, DEFAULT_TARGETS.answered, DEFAULT_TARGETS.negatives_answered):
        assert f"(default: {value})" in text
