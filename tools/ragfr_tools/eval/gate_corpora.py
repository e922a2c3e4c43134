"""The evidence gate on corpora its fit never saw (issue 47 items 1 and 3), and the subject signal beside it.

Each test corpus is ingested with the product's ingestion, searched with the product's search (no reranker),
and every search is decided by: the rank rule (what a model without fitted coefficients gets: the chart's
bge-m3), the shipped fitted gate of e5-small (src/ragfr/gate/models/), and the subject rule
(ragfr.analysis.subject) on top of either. One row per search; the report counts, per corpus and per kind,
the share answered without caution / cautioned / refused.

Corpora and kinds:
  piaf-<category>   the PIAF paragraphs of one `categorie` (the file is read where it lies, never copied)
    answerable      a sample of its own questions; "answerable" when the fused top 3 holds the paragraph,
                    else "miss" (counted, not scored)
    off             questions of the categories not under test, and golden / unanswerable.jsonl questions
    near-topic      topic-removed: K topics (a distinctive word of an article title), every paragraph naming
                    one of them removed (collection piaf-<category>-minus-topics), the questions naming
                    them asked of what is left
  golden            the golden contracts (eval/golden)
    answerable      golden questions (their filters applied) and eval/gate/paraphrases.jsonl (new wordings)
    near-hand       eval/gate/near-golden.jsonl: in-domain questions whose subject no document addresses
    near-unans      eval/gate/unanswerable.jsonl near-domain questions (an earlier set, shown apart)
    near-topic      golden topics (TOPICS_GOLDEN) removed likewise
    off             PIAF questions, unanswerable.jsonl off-domain questions
What the shipped e5 fit saw: the FIT side (sha256(title) mod 10 >= 4) of every PIAF category, golden's FIT
side; thresholds on DEV. Rows say `fit_saw` (PIAF article or golden question on the FIT/DEV side) so the
report can be read on what it never saw. The subject rule (ragfr.analysis.subject) was written before any
search, then revised ONCE after the first USE run of this harness, by reading the answerable questions it
flagged on every corpus here (answer-type words, « a » / « à », verbs before an article): its numbers on
these corpora are therefore not held out.

    python -m ragfr_tools.eval.gate_corpora --dsn DSN --model local:multilingual-e5-small \
        --categories Religion,Sport,Sciences --per-kind 150
    python -m ragfr_tools.eval.gate_corpora --reuse --rows .state/gatecorpora/<model>.rows.jsonl

Progress on stderr; rows in --rows (JSON lines, written as searched), the report in --out.
"""

from __future__ import annotations

import argparse
import json
import random
import re
import sys
import time
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ragfr.analysis.folding import fold
from ragfr.analysis.french import analyze, query_terms
from ragfr.analysis.subject import absent_subject, subject_lexemes, subject_terms
from ragfr.eval.beir import Dataset, Query, load_dataset, read_qrels
from ragfr_tools.eval.gate_calibration import unanswerable_questions
from ragfr_tools.eval.gate_collect import answer_in, answer_spans, side_of
from ragfr_tools.repo import PIAF_JSON, REPO
from ragfr_tools.reranker.data import sample_queries, subset

GATE_DIR = REPO / "eval" / "gate"
GOLDEN = REPO / "eval" / "golden"
PROBES = GATE_DIR / "probes.jsonl"  # everyday questions no test corpus is about (collection-relative scale)
E5 = "local:multilingual-e5-small"
KINDS = ("answerable", "miss", "off", "near-topic", "near-hand", "near-unans")
# Golden topics left out for its topic-removed kind: distinctive subjects of its articles, each named by
# a few questions (chosen from the titles before any search).
TOPICS_GOLDEN = ("IRSI", "Badinter", "Hamon", "subrogation", "arbitrage", "bonus", "vétusté", "grêle", "fraude",
                 "reconstitution", "gel")
GATES = ("rank", "fitted", "rank+subject", "fitted+subject", "rank+strong", "fitted+strong")


def say(msg: str) -> None:
    print(f"gate_corpora: {msg}", file=sys.stderr, flush=True)


@dataclass(frozen=True)
class Ask:
    corpus: str  # the report's group: piaf-religion, golden
    kind: str  # answerable | off | near-topic | near-hand | near-unans
    source: str  # piaf | golden | paraphrase | near-golden | unanswerable
    qid: str
    text: str
    target: str  # key of the collection asked
    relevant: tuple[str, ...] = ()
    filters: tuple[tuple[str, Any], ...] = ()
    answers: tuple[str, ...] = ()
    fit_saw: bool | None = None  # the shipped fit (or its thresholds) saw this question's article / question


def slug(text: str) -> str:
    return re.sub(r"[^a-z0-9]+", "-", fold(text).lower()).strip("-")


def category_of(raw: dict[str, Any]) -> dict[str, str]:
    """PIAF article title -> its categorie."""
    return {str(a["title"]): str(a.get("categorie") or "?") for a in raw["data"]}


def _lexemes(text: str) -> set[str]:
    return set(analyze(text))


def choose_topics(ds: Dataset, k: int, keep_share: float = 0.6) -> list[str]:
    """K topic lexemes: for each article, its title's longest meaningful word; kept when questions of that
    article name it; the topics whose removal keeps the most of the corpus first, until removing more would
    leave less than `keep_share` of the paragraphs."""
    docs = {d: _lexemes(f"{doc.title}\n\n{doc.text}") for d, doc in ds.corpus.items()}
    by_title: dict[str, list[str]] = {}
    for d, doc in ds.corpus.items():
        by_title.setdefault(doc.title, []).append(d)
    candidates: list[tuple[int, str]] = []
    for title in sorted(by_title):
        words = sorted((w for w in query_terms(title) if len(w) >= 4 and not w.isdigit()), key=len, reverse=True)
        if not words:
            continue
        topic = words[0]
        naming = sum(topic in _lexemes(q.text) for q in ds.queries.values()
                     if set(ds.qrels[q.id]) & set(by_title[title]))
        if naming >= 2:
            candidates.append((sum(topic in lx for lx in docs.values()), topic))
    chosen: list[str] = []
    removed: set[str] = set()
    for _, topic in sorted(set(candidates)):
        more = {d for d, lx in docs.items() if topic in lx}
        if len(removed | more) > (1 - keep_share) * len(docs) or len(chosen) >= k:
            continue
        chosen.append(topic)
        removed |= more
    return chosen


def without_topics(ds: Dataset, topics: Iterable[str], name: str) -> Dataset:
    gone = set(topics)
    corpus = {d: doc for d, doc in ds.corpus.items() if not gone & _lexemes(f"{doc.title}\n\n{doc.text}")}
    return Dataset(name, corpus, {}, {})


def naming(text: str, topics: Iterable[str]) -> bool:
    return bool(set(topics) & _lexemes(text))


def _piaf_asks(raw: dict[str, Any], full: Dataset, categories: Sequence[str], per_kind: int, topics_k: int,
               seed: int, golden: Dataset, datasets: dict[str, Dataset]) -> list[Ask]:
    cat = category_of(raw)
    spans = answer_spans(raw)
    asks: list[Ask] = []
    outside = subset(full, {t for t, c in cat.items() if c not in categories}, "piaf-outside")
    off_pool = sample_queries(outside, per_kind, seed)
    for c in categories:
        key = f"piaf-{slug(c)}"
        ds = subset(full, {t for t, cc in cat.items() if cc == c}, key)
        datasets[key] = ds
        title = {q: ds.corpus[next(iter(rel))].title for q, rel in ds.qrels.items()}
        for q in sample_queries(ds, per_kind, seed):
            asks.append(Ask(key, "answerable", "piaf", q.id, q.text, key, tuple(ds.qrels[q.id]),
                            answers=spans.get(q.id, ()), fit_saw=side_of(title[q.id]) != "test"))
        for q in off_pool:
            asks.append(Ask(key, "off", "piaf", q.id, q.text, key, answers=spans.get(q.id, ())))
        for gq in sorted(golden.queries.values(), key=lambda g: g.id)[:40]:
            asks.append(Ask(key, "off", "golden", gq.id, gq.text, key))
        topics = choose_topics(ds, topics_k)
        minus = f"{key}-minus-topics"
        datasets[minus] = without_topics(ds, topics, minus)
        say(f"{key}: {len(ds.corpus)} paragraphs; topics {topics} leave {len(datasets[minus].corpus)}")
        named = [q for q in sorted(ds.queries.values(), key=lambda q: q.id) if naming(q.text, topics)]
        named = sorted(random.Random(seed).sample(named, min(per_kind, len(named))), key=lambda q: q.id)
        for q in named:
            asks.append(Ask(key, "near-topic", "piaf", q.id, q.text, minus, answers=spans.get(q.id, ()),
                            fit_saw=side_of(title[q.id]) != "test"))
    return asks


def golden_extra() -> tuple[list[Query], dict[str, dict[str, int]], list[dict[str, Any]]]:
    """(paraphrase queries, their qrels, near-golden questions) from eval/gate."""
    golden = load_dataset(GOLDEN)
    para = [Query(str(r["_id"]), str(r["text"]), {}, tuple(r.get("tags") or ()))
            for r in unanswerable_questions(GATE_DIR / "paraphrases.jsonl")]
    qrels = read_qrels(GATE_DIR / "paraphrases-qrels.tsv", golden.corpus, {q.id: q for q in para})
    return para, qrels, unanswerable_questions(GATE_DIR / "near-golden.jsonl")


def _golden_asks(golden: Dataset, raw: dict[str, Any] | None, full: Dataset | None, per_kind: int, seed: int,
                 datasets: dict[str, Dataset]) -> list[Ask]:
    datasets["golden"] = golden
    asks: list[Ask] = []
    topic_lexemes = sorted({lx for t in TOPICS_GOLDEN for lx in query_terms(t)})
    datasets["golden-minus-topics"] = without_topics(golden, topic_lexemes, "golden-minus-topics")
    say(f"golden: {len(golden.corpus)} articles; topics {topic_lexemes} leave "
        f"{len(datasets['golden-minus-topics'].corpus)}")
    for q in sorted(golden.queries.values(), key=lambda q: q.id):
        rel = tuple(d for d, g in golden.qrels.get(q.id, {}).items() if g > 0)
        if rel:
            asks.append(Ask("golden", "answerable", "golden", q.id, q.text, "golden", rel, tuple(q.filters.items()),
                            fit_saw=side_of(q.id) != "test"))
            if not q.filters and naming(q.text, topic_lexemes):
                asks.append(Ask("golden", "near-topic", "golden", q.id, q.text, "golden-minus-topics",
                                fit_saw=side_of(q.id) != "test"))
    para, qrels, near = golden_extra()
    for q in para:
        asks.append(Ask("golden", "answerable", "paraphrase", q.id, q.text, "golden",
                        tuple(d for d, g in qrels[q.id].items() if g > 0), fit_saw=False))
        if naming(q.text, topic_lexemes):
            asks.append(Ask("golden", "near-topic", "paraphrase", q.id, q.text, "golden-minus-topics", fit_saw=False))
    for r in near:
        asks.append(Ask("golden", "near-hand", "near-golden", str(r["_id"]), str(r["text"]), "golden", fit_saw=False))
    for r in unanswerable_questions(GATE_DIR / "unanswerable.jsonl"):
        kind = "near-unans" if r.get("kind") == "near-domain" else "off"
        asks.append(Ask("golden", kind, "unanswerable", str(r["_id"]), str(r["text"]), "golden",
                        fit_saw=side_of(str(r["_id"])) != "test"))
    if full is not None and raw is not None:
        spans = answer_spans(raw)
        for q in sample_queries(full, per_kind, seed + 1):
            asks.append(Ask("golden", "off", "piaf", q.id, q.text, "golden", answers=spans.get(q.id, ())))
    return asks


def plan(raw: dict[str, Any] | None, categories: Sequence[str], per_kind: int, topics_k: int = 12,
         seed: int = 47, golden: Dataset | None = None) -> tuple[dict[str, Dataset], list[Ask]]:
    """(collection key -> dataset to ingest, every search to run)."""
    from ragfr.eval.piaf import piaf_to_beir

    golden = golden or load_dataset(GOLDEN)
    datasets: dict[str, Dataset] = {}
    full = piaf_to_beir(raw) if raw is not None else None
    asks = _piaf_asks(raw, full, categories, per_kind, topics_k, seed, golden, datasets) if full and raw else []
    asks += _golden_asks(golden, raw, full, per_kind, seed, datasets)
    return datasets, asks


def _gate_modules() -> tuple[Any, Any, Any]:
    """(rank, fitted, features) of ragfr.gate, imported late: planning and --reuse need no database driver."""
    from ragfr.gate import features, fitted, rank

    return rank, fitted, features


def search_all(dsn: str, model: str, datasets: dict[str, Dataset], asks: list[Ask], out: Path,
               progress_every: int = 100) -> list[dict[str, Any]]:
    """Ingest every dataset (idempotent, cached embeddings), run every search, write one row per search."""
    import psycopg

    from ragfr.embed import load_embedder
    from ragfr.eval.corpus import chunk_documents, documents_ranking, ensure_ingested
    from ragfr.filters.grammar import from_mapping
    from ragfr.ingest.chunking import ChunkConfig
    from ragfr.retrieval import hybrid
    from ragfr.retrieval.config import SearchConfig

    rank, _, features = _gate_modules()
    embedder = load_embedder(model)
    started = time.monotonic()
    rows: list[dict[str, Any]] = []
    out.parent.mkdir(parents=True, exist_ok=True)
    with psycopg.connect(dsn, autocommit=True) as conn:
        colls: dict[str, tuple[str, dict[str, str]]] = {}
        for key, ds in datasets.items():
            say(f"ingesting {key} ({len(ds.corpus)} documents, {model}; cached embeddings reused)")
            name, _ = ensure_ingested(conn, ds, embedder, ChunkConfig(), progress=False)
            colls[key] = (name, chunk_documents(conn, name))
        texts = sorted({a.text for a in asks})
        say(f"embedding {len(texts)} questions")
        vectors = dict(zip(texts, embedder.embed_queries(texts), strict=True))
        config, rank_gate = SearchConfig(rerank=False), rank.GateConfig.for_scale("rrf")
        probes = [str(r["text"]) for r in unanswerable_questions(PROBES)]
        vectors.update(zip(probes, embedder.embed_queries(probes), strict=True))
        with out.open("w", encoding="utf-8") as f:
            # How close unrelated questions come to each collection: the scale its own scores are read on
            for key, (name, _) in colls.items():
                for text in probes:
                    result = hybrid.search(conn, text, collections=[name], query_vector=vectors[text],
                                           embedder=embedder, config=config)
                    rows.append({"corpus": key, "kind": "probe", "source": "probes", "qid": "", "text": text,
                                 "target": key, "fit_saw": None, "features": result.evidence,
                                 "rank_gate": "", "df": {}, "top3": [], "answer_in_top3": None, "top": ""})
                    f.write(json.dumps(rows[-1], ensure_ascii=False) + "\n")
            say(f"{len(probes)} probe questions asked of each of {len(colls)} collections")
            for n, a in enumerate(asks, 1):
                name, chunk_to_doc = colls[a.target]
                result = hybrid.search(conn, a.text, collections=[name], conditions=from_mapping(dict(a.filters)),
                                       query_vector=vectors[a.text], embedder=embedder, config=config)
                kind = a.kind
                if kind == "answerable":
                    top3 = documents_ranking([h.id for h in result.hits], chunk_to_doc)[:3]
                    kind = "answerable" if set(top3) & set(a.relevant) else "miss"
                # every lexeme of the question, so a later subject rule can be replayed from the row (--reuse)
                lexemes = sorted(set(analyze(a.text)))
                df = features.term_stats(conn, [name], lexemes, 1).df if lexemes else {}
                top3 = [h.text or "" for h in result.hits[:3]]
                rows.append({
                    "corpus": a.corpus, "kind": kind, "source": a.source, "qid": a.qid, "text": a.text,
                    "target": a.target, "fit_saw": a.fit_saw, "features": result.evidence,
                    "rank_gate": "answer" if rank.assess(result.hits, rank_gate).grounded else "refuse",
                    "df": {lx: df.get(lx, 0) for lx in lexemes}, "top3": top3,
                    "answer_in_top3": answer_in(a.answers, top3),
                    "top": (result.hits[0].text or "")[:160] if result.hits else ""})
                f.write(json.dumps(rows[-1], ensure_ascii=False) + "\n")
                f.flush()
                rows[-1]["absent"] = absence_of(rows[-1])
                if n % progress_every == 0 or n == len(asks):
                    el = time.monotonic() - started
                    say(f"{n}/{len(asks)} searches, {el:.0f} s")
    return rows


# -- decisions ------------------------------------------------------------------------------------------------

def fitted_gate(model: str = E5) -> Any:
    """The shipped coefficients of `model` (e5: the only ones shipped), whatever model the rows came from."""
    _, fitted, _ = _gate_modules()
    return fitted._shipped(model)


def absence_of(row: dict[str, Any]) -> dict[str, Any] | None:
    """The subject rule replayed on a row (its question, the df of its lexemes, its top 3 passages)."""
    if row["kind"] == "probe":
        return None
    got = absent_subject(subject_terms(row["text"]), row["df"], row["top3"])
    if got is None:
        return None
    return {"where": got.where, "strong": got.strong, "subject": got.subject.surface, "missing": list(got.missing),
            "reason": got.reason_fr()}


def with_subject(base: str, absent: dict[str, Any] | None, strong_only: bool = False) -> str:
    """The subject rule over a base decision. "subject": a head noun no passage of the collection holds
    (strong) refuses; a modifier no passage holds, or a subject none of the top passages holds, turns an
    answer into a caution. "strong" (`strong_only`): only a strong absence counts, and it refuses what the base
    did not answer and cautions what it did."""
    if absent is None:
        return base
    if strong_only:
        if not absent.get("strong"):
            return base
        return "refuse" if base != "answer" else "caution"
    if absent.get("strong"):
        return "refuse"
    return "caution" if base == "answer" else base


def decisions(row: dict[str, Any], gate: Any) -> dict[str, str]:
    fit = gate.decide(row["features"])[0] if gate is not None else row["rank_gate"]
    return {"rank": row["rank_gate"], "fitted": fit,
            "rank+subject": with_subject(row["rank_gate"], row["absent"]),
            "fitted+subject": with_subject(fit, row["absent"]),
            "rank+strong": with_subject(row["rank_gate"], row["absent"], strong_only=True),
            "fitted+strong": with_subject(fit, row["absent"], strong_only=True)}


def _shares(outcomes: list[str]) -> dict[str, Any]:
    n = len(outcomes)
    return {"n": n, **{k: round(sum(o == k for o in outcomes) / n, 4) if n else None
                       for k in ("answer", "caution", "refuse")}}


def report(rows: list[dict[str, Any]], gate: Any,
           keep: Callable[[dict[str, Any]], bool] = lambda r: True) -> dict[str, Any]:
    """corpus -> kind -> gate -> shares; plus 'all' over every corpus."""
    groups: dict[tuple[str, str], list[dict[str, str]]] = {}
    for r in rows:
        if r["kind"] == "probe" or not keep(r):
            continue
        d = decisions(r, gate)
        for corpus in (r["corpus"], "all"):
            groups.setdefault((corpus, r["kind"]), []).append(d)
            if r["kind"] in ("answerable", "off") and r["source"] != "piaf":
                groups.setdefault((corpus, f"{r['kind']}:{r['source']}"), []).append(d)
    out: dict[str, Any] = {}
    for (corpus, kind), ds in sorted(groups.items()):
        out.setdefault(corpus, {})[kind] = {g: _shares([d[g] for d in ds]) for g in GATES}
    return out


GOALS = {"answerable": {"answer": (">=", 0.90), "refuse": ("<=", 0.02)},
         "off": {"refuse": (">=", 0.90), "answer": ("<=", 0.03)},
         "near-topic": {"answer": ("<=", 0.10), "refuse": (">=", 0.60)},
         "near-hand": {"answer": ("<=", 0.10), "refuse": (">=", 0.60)}}


def goals_met(rep: dict[str, Any]) -> dict[str, dict[str, dict[str, bool]]]:
    out: dict[str, dict[str, dict[str, bool]]] = {}
    for corpus, kinds in rep.items():
        for kind, want in GOALS.items():
            if kind not in kinds:
                continue
            for gate, s in kinds[kind].items():
                ok = all((s[k] >= v) if op == ">=" else (s[k] <= v) for k, (op, v) in want.items())
                out.setdefault(corpus, {}).setdefault(gate, {})[kind] = ok
    return out


def table(rep: dict[str, Any], gates: Sequence[str] = GATES) -> str:
    head = "| corpus | kind | n | " + " | ".join(f"{g} % ans / caut / ref" for g in gates) + " |"
    lines = [head, "|" + "---|" * (3 + len(gates))]
    for corpus, kinds in rep.items():
        for kind, by_gate in kinds.items():
            n = next(iter(by_gate.values()))["n"]
            cells = [f"{100 * s['answer']:.1f} / {100 * s['caution']:.1f} / {100 * s['refuse']:.1f}"
                     for s in (by_gate[g] for g in gates)]
            lines.append(f"| {corpus} | {kind} | {n} | " + " | ".join(cells) + " |")
    return "\n".join(lines)


def errors(rows: list[dict[str, Any]], gate: Any, which: str, limit: int = 10) -> dict[str, list[dict[str, Any]]]:
    """Up to `limit` rows per error kind under gate `which`: answerable refused or cautioned, near and off
    answered without caution."""
    out: dict[str, list[dict[str, Any]]] = {}
    for r in rows:
        if r["kind"] == "probe":
            continue
        d = decisions(r, gate)[which]
        bad = (r["kind"] == "answerable" and d != "answer") or (r["kind"] not in ("answerable", "miss")
                                                                and d == "answer")
        if bad:
            lst = out.setdefault(f"{r['kind']}:{d}", [])
            if len(lst) < limit:
                lst.append({"corpus": r["corpus"], "text": r["text"], "absent": r["absent"], "top": r["top"][:120]})
    return out


def complete_df(rows: list[dict[str, Any]], dsn: str, model: str) -> int:
    """Read from the database the document frequencies a replayed subject rule needs that a row lacks (rows
    keep every lexeme of their question; a newer rule may also look up equivalents of its head nouns).
    Returns how many lexemes were read."""
    import psycopg

    _, _, features = _gate_modules()
    model_part = re.sub(r"[^a-z0-9]+", "-", model.lower()).strip("-")[:32]
    want: dict[str, set[str]] = {}
    for r in rows:
        if r["kind"] != "probe":
            want.setdefault(r["target"], set()).update(
                lx for lx in subject_lexemes(subject_terms(r["text"])) if lx not in r["df"])
    got: dict[str, dict[str, int]] = {}
    with psycopg.connect(dsn, autocommit=True) as conn:
        names = [str(n) for (n,) in conn.execute("SELECT DISTINCT collection_name FROM ragfr_term_stats")]
        for target, lexemes in want.items():
            match = [n for n in names if n.startswith(f"eval-{target[:24]}-{model_part}-")]
            if len(match) != 1:
                raise SystemExit(f"gate_corpora: {len(match)} collections for {target!r} in the database")
            got[target] = features.term_stats(conn, match, sorted(lexemes), 1).df if lexemes else {}
    for r in rows:
        if r["kind"] != "probe":
            r["df"] = {**{lx: got[r["target"]].get(lx, 0) for lx in want[r["target"]]}, **r["df"]}
    return sum(len(v) for v in want.values())


def read_rows(path: Path) -> list[dict[str, Any]]:
    return [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines() if line.strip()]


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--dsn", help="a migrated database whose vector dimension fits --model")
    ap.add_argument("--model", default=E5, help="embedding model id (default %(default)s; local:use-multilingual)")
    ap.add_argument("--piaf", type=Path, default=PIAF_JSON)
    ap.add_argument("--categories", default="Religion,Sport,Sciences",
                    help="PIAF categories under test, comma-separated (default %(default)s)")
    ap.add_argument("--per-kind", type=int, default=150, help="PIAF questions per corpus and kind")
    ap.add_argument("--topics", type=int, default=12, help="topics removed per PIAF corpus")
    ap.add_argument("--no-piaf", action="store_true", help="golden only")
    ap.add_argument("--rows", type=Path, help="default .state/gatecorpora/<model>.rows.jsonl")
    ap.add_argument("--reuse", action="store_true", help="read --rows instead of searching")
    ap.add_argument("--out", type=Path, help="default docs/bench/gate-corpora-<model>.json")
    args = ap.parse_args(argv)
    model_slug = slug(args.model.split(":")[-1])
    rows_path = args.rows or REPO / ".state" / "gatecorpora" / f"{model_slug}.rows.jsonl"
    out = args.out or REPO / "docs" / "bench" / f"gate-corpora-{model_slug}.json"
    started = time.monotonic()
    if args.reuse:
        rows = read_rows(rows_path)
        if args.dsn:
            say(f"{complete_df(rows, args.dsn, args.model)} document frequencies read for the replayed rule")
        for r in rows:
            r["absent"] = absence_of(r)
    else:
        if not args.dsn:
            ap.error("--dsn (to search) or --reuse")
        from ragfr.eval.piaf import load_piaf

        raw = None if args.no_piaf else load_piaf(args.piaf)
        categories = [c.strip() for c in args.categories.split(",") if c.strip()]
        datasets, asks = plan(raw, categories, args.per_kind, args.topics)
        say(f"{len(asks)} searches over {len(datasets)} collections")
        rows = search_all(args.dsn, args.model, datasets, asks, rows_path)
    gate = fitted_gate(E5)
    rep = report(rows, gate)
    unseen = report(rows, gate, keep=lambda r: r["fit_saw"] is not True)
    doc = {"embedding_model": args.model, "fitted_gate": "shipped e5 coefficients" if gate else None,
           "command": "python -m ragfr_tools.eval.gate_corpora " + " ".join(
               a if a != args.dsn else "DSN" for a in (argv if argv is not None else sys.argv[1:])),
           "date": time.strftime("%Y-%m-%d"), "rows": str(rows_path), "report": rep, "report_unseen_by_fit": unseen,
           "goals": goals_met(rep), "errors": {g: errors(rows, gate, g) for g in ("fitted", "fitted+subject")},
           "wall_seconds": round(time.monotonic() - started, 1)}
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(json.dumps(doc, indent=2, ensure_ascii=False, sort_keys=True) + "\n")
    print(table(rep))
    say(f"report {out}; wall {doc['wall_seconds']:.0f} s")
    return 0


if __name__ == "__main__":
    sys.exit(main())
