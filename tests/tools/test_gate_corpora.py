"""ragfr_tools.eval.gate_corpora (issue 47): the cross-corpus harness on a tiny corpus, end to end through
production ingestion and search in a real database with a real offline model (USE, the fast one), and its
decision arithmetic."""

from __future__ import annotations

from pathlib import Path

from ragfr.eval.beir import Dataset, Document
from ragfr_tools.eval.gate_corpora import (
    Ask,
    choose_topics,
    decisions,
    main,
    report,
    search_all,
    table,
    with_subject,
    without_topics,
)

DOCS = {
    "vol": "Vol et vandalisme. Nous garantissons la disparition des biens assurés à la suite d'un vol avec effraction.",
    "gel": "Gel des conduites. Les dommages dus au gel des canalisations sont garantis si le logement était chauffé.",
    "vitre": "Bris de glace. Le bris accidentel des vitres et des baies vitrées est garanti, sans vétusté.",
    "franchise": "Franchise. Une franchise de 150 euros est déduite de toute indemnité due au titre du contrat.",
}


def _dataset() -> Dataset:
    corpus = {d: Document(d, d.capitalize(), text, {}) for d, text in DOCS.items()}
    return Dataset("tiny-contracts", corpus, {}, {})


def test_the_subject_rule_over_a_base_decision() -> None:
    collection = {"where": "collection", "strong": True, "subject": "borne de recharge"}
    weak = {"where": "collection", "strong": False, "subject": "panneaux photovoltaïques"}
    top = {"where": "top", "strong": False, "subject": "accidents de la vie"}
    assert with_subject("answer", None) == "answer"
    assert with_subject("answer", collection) == "refuse"
    assert with_subject("answer", collection, strong_only=True) == "caution"
    assert with_subject("caution", collection, strong_only=True) == "refuse"
    assert with_subject("answer", weak) == "caution" and with_subject("answer", weak, strong_only=True) == "answer"
    assert with_subject("answer", top) == "caution"
    assert with_subject("refuse", top) == "refuse"
    row = {"rank_gate": "answer", "absent": top, "features": {}}
    assert decisions(row, None) == {"rank": "answer", "fitted": "answer", "rank+subject": "caution",
                                    "fitted+subject": "caution", "rank+strong": "answer", "fitted+strong": "answer"}


def test_topics_removed_take_every_document_naming_them() -> None:
    ds = _dataset()
    assert sorted(without_topics(ds, ["gel"], "minus").corpus) == ["franchise", "vitre", "vol"]
    assert choose_topics(ds, 3) == []  # no questions name any title word: nothing to ask, nothing removed


def test_the_harness_searches_decides_and_reports_on_a_tiny_corpus(migrated_db, tmp_path: Path) -> None:
    dsn = migrated_db(dims=512, model="local:use-multilingual")
    ds = _dataset()
    datasets = {"tiny": ds, "tiny-minus-topics": without_topics(ds, ["gel"], "tiny-minus-topics")}
    asks = [
        Ask("tiny", "answerable", "golden", "a1", "Le vol avec effraction est-il garanti ?", "tiny", ("vol",)),
        Ask("tiny", "answerable", "golden", "a2", "Quel est le montant de la franchise ?", "tiny", ("franchise",)),
        Ask("tiny", "near-hand", "near-golden", "n1", "La borne de recharge de ma voiture est-elle couverte ?", "tiny"),
        Ask("tiny", "near-topic", "golden", "t1", "Le gel des canalisations est-il garanti ?", "tiny-minus-topics"),
        Ask("tiny", "off", "piaf", "o1", "Qui a écrit Les Misérables ?", "tiny"),
    ]
    rows = search_all(dsn, "local:use-multilingual", datasets, asks, tmp_path / "rows.jsonl")
    probes = [r for r in rows if r["kind"] == "probe"]
    searched = [r for r in rows if r["kind"] != "probe"]
    assert len(probes) == 30 * len(datasets) and all(r["features"] for r in probes)
    assert [r["qid"] for r in searched] == ["a1", "a2", "n1", "t1", "o1"]
    by_id = {r["qid"]: r for r in searched}
    assert by_id["a1"]["kind"] == "answerable" and by_id["a2"]["kind"] == "answerable"
    assert by_id["a1"]["absent"] is None
    assert by_id["n1"]["absent"]["where"] == "collection" and by_id["n1"]["absent"]["strong"]
    assert by_id["n1"]["absent"]["reason"] == "Aucun des documents joints ne mentionne « borne de recharge de ma voiture »."
    assert by_id["t1"]["absent"]["where"] == "collection"  # "gel" left the collection with its document
    assert {r["rank_gate"] for r in searched} <= {"answer", "refuse"}
    rep = report(rows, None)
    assert rep["tiny"]["near-hand"]["rank+subject"] == {"n": 1, "answer": 0.0, "caution": 0.0, "refuse": 1.0}
    assert rep["all"]["answerable"]["rank"]["n"] == 2
    assert "| tiny | near-topic | 1 |" in table(rep)
    # the report again from the rows written, without a database
    out = tmp_path / "report.json"
    assert main(["--reuse", "--rows", str(tmp_path / "rows.jsonl"), "--out", str(out)]) == 0
    assert '"near-hand"' in out.read_text()


def test_the_transfer_gate_reads_cosines_on_the_collections_probe_scale_and_decides_unseen_rows() -> None:
    """ragfr_tools.eval.gate_transfer: a cosine is read against the probe questions of ITS collection, so the
    same fitted gate decides alike on a model whose cosines sit elsewhere."""
    import random

    from ragfr_tools.eval.gate_transfer import VARIANTS, probe_scales, relative, train

    def row(corpus: str, kind: str, cos: float, i: int, shift: float = 0.0) -> dict:
        f = {"cos1": cos + shift, "cos3": cos + shift - 0.01, "rrf1": 1.0 if kind == "answerable" else 0.5}
        return {"corpus": corpus, "target": corpus, "kind": kind, "qid": f"{kind}{i}", "text": f"{kind} {i}",
                "features": f, "absent": None}

    rnd = random.Random(3)
    rows = [row("c", "probe", 0.70 + rnd.uniform(-0.02, 0.02), i) for i in range(30)]
    rows += [row("c", "answerable", 0.90 + rnd.uniform(-0.03, 0.03), i) for i in range(60)]
    rows += [row("c", "off", 0.72 + rnd.uniform(-0.03, 0.03), i) for i in range(60)]
    scales = probe_scales(rows)
    assert abs(scales["c"][0] - 0.70) < 0.01 and 0 < scales["c"][1] < 0.02
    assert relative(rows[40], scales)["zcos1"] > 5
    gate = train(rows, scales, VARIANTS["relative"], ["c"])
    # another model: every cosine 0.4 lower, the probes too; the gate was never fitted on it
    other = [row("d", r["kind"], r["features"]["cos1"], i, shift=-0.4) for i, r in enumerate(rows)]
    other_scales = probe_scales(other)
    same = [gate.decide(relative(r, scales)) for r in rows if r["kind"] != "probe"]
    moved = [gate.decide(relative(r, other_scales)) for r in other if r["kind"] != "probe"]
    assert moved == same  # the scale moved with the model, the decisions did not
    answerable, off = moved[:60], moved[60:]
    assert answerable.count("answer") >= 50 and answerable.count("refuse") <= 3  # caution_at: 2.5th percentile
    assert off.count("answer") == 0
