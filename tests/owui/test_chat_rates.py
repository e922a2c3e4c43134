"""The evidence gate's rates through Open WebUI's chat equal the calibration program's on the same collection.

The golden corpus is uploaded to an Open WebUI knowledge base (each document a file `<doc id>.txt`: title,
blank line, text — as ragfr's evaluation ingests it), chunked by Open WebUI with the settings file. Then:
  - `python -m ragfr_tools.eval.gate_calibration --collection KB --answerable-limit 40 --json` scores the
    golden set on THAT collection: the 40 unanswerable
    questions (eval/gate/unanswerable.jsonl) and as many answerable golden questions (the first 40, by id,
    without metadata filters, whose relevant document ragfr ranks in the top 3 — its answerable side);
  - the same questions go through Open WebUI's chat API with the knowledge base attached; a reply is a
    refusal when it is the gate's fixed French message.
The answer rate on the answerable side and the refusal rate on the unanswerable side must match within
2 points. Settings: those of `make up` (tests/owui/stack.py).
"""

from __future__ import annotations

import json
import subprocess
import sys
import time
from pathlib import Path

import pytest
from tests.support.paths import REPO

from ragfr.eval.beir import load_dataset
from ragfr.gate.rank import GateConfig
from ragfr.owui.runtime.chat_gate import REFUSAL
from ragfr_tools.eval.gate_calibration import unanswerable_questions

from .stack import Server, answer_text, ask, knowledge_base

pytestmark = [pytest.mark.owui, pytest.mark.slow]

GOLDEN = REPO / "eval" / "golden"
UNANSWERABLE = REPO / "eval" / "gate" / "unanswerable.jsonl"
TOLERANCE = 0.02


def upload_golden(server: Server, token: str, golden: Path) -> str:
    dataset = load_dataset(golden)
    files = {f"{d.id}.txt": (f"{d.title}\n\n{d.text}" if d.title else d.text) for d in dataset.corpus.values()}
    return knowledge_base(server, token, "Golden", files)


def test_chat_rates_match_the_calibration_program(owui_server: Server, admin_token: str) -> None:
    started = time.monotonic()
    kb = upload_golden(owui_server, admin_token, GOLDEN)
    uploaded = time.monotonic()
    dataset = load_dataset(GOLDEN)
    unanswerable = unanswerable_questions(UNANSWERABLE)
    program = subprocess.run(
        [sys.executable, "-m", "ragfr_tools.eval.gate_calibration", "--dsn", owui_server.dsn, "--collection", kb,
         "--answerable-limit", str(len(unanswerable)), "--json"],
        capture_output=True, text=True, timeout=900, check=False,
    )
    assert program.returncode == 0, program.stderr[-3000:]
    report = json.loads(program.stdout)
    # The program's decisions are `ragfr ask`'s (ragfr.ask.gate_search: the fitted evidence gate of the
    # knowledge base's embedding model when one ships, else the rank rule); the chat must take the same.
    calibration = {**report["rrf"]["default"], **report["gate"]}
    scored = report["scores"]
    assert calibration["threshold"] == GateConfig.for_scale("rrf").evidence_threshold  # the gate of `ragfr ask`
    answerable = report["answerable"]
    assert answerable == len(unanswerable), f"only {answerable} answerable golden questions retrieved in the top 3"
    calibrated = time.monotonic()

    texts = {q.id: q.text for q in dataset.queries.values()} | {u["_id"]: u["text"] for u in unanswerable}
    refused: dict[str, bool] = {}
    chats_before = owui_server.double.chat_requests()
    for s in scored:
        refused[s["id"]] = answer_text(ask(owui_server, admin_token, texts[s["id"]], kb)).startswith(REFUSAL)
    asked = time.monotonic()
    answered_rate = sum(not refused[s["id"]] for s in scored if s["answerable"]) / answerable
    refused_rate = sum(refused[s["id"]] for s in scored if not s["answerable"]) / len(unanswerable)
    disagreements = [(s["id"], s["rrf"], s["decision"], refused[s["id"]]) for s in scored
                     if refused[s["id"]] != (s["decision"] == "refuse")]
    print(f"gate_calibration on {kb}: answers {calibration['answered']:.1%} of {answerable} answerable, "
          f"refuses {calibration['refused']:.1%} of {len(unanswerable)} unanswerable")
    print(f"Open WebUI chat:       answers {answered_rate:.1%}, refuses {refused_rate:.1%}; "
          f"disagreements {disagreements}")
    print(f"timings: upload {uploaded - started:.1f}s, calibration {calibrated - uploaded:.1f}s, "
          f"{len(scored)} chat questions {asked - calibrated:.1f}s")
    assert abs(answered_rate - calibration["answered"]) <= TOLERANCE
    assert abs(refused_rate - calibration["refused"]) <= TOLERANCE
    # Every answered question made exactly one chat request; no refused one made any.
    assert owui_server.double.chat_requests() - chats_before == sum(not r for r in refused.values())
