"""The evidence gate in Open WebUI's chat: what the patched middleware and main.py call.

Where it sits (patches/open-webui, docs/decisions/0004): Open WebUI's `process_chat_payload` has just
retrieved the passages of the attached knowledge (through ragfr's hybrid search) and is about to put
them into the model's context; `gate()` decides there, with the thresholds of `ragfr ask`
(`ragfr.gate.rank`). Then `main.chat_completion` asks `refusal_response()` before the chat-model
call: below the gate it returns a fixed French message (and the closest passages with their file
names) in place of the model's reply, so no request reaches the model.

Scores
  rrf (default)    the best RRF score of each ragfr search, stamped on every passage by the adapter
                   (`ragfr_top_rrf_score`): Open WebUI's own re-scoring after ragfr keeps only a few
                   candidates and must not change the gate's input. Per passage: `ragfr_rrf_score`.
  cross-encoder    only when Open WebUI ran its reranker AND RAGFR_GATE_CE_EVIDENCE is set (a calibrated
                   logit, docs/runbooks/calibrate-relevance-threshold.md): Open WebUI's reranker scores
                   are sigmoids, turned back into logits to compare with the thresholds.
The decision is `ragfr.gate.rank.decide`'s, the one `ragfr ask` takes; this module only reads the scores
off Open WebUI's passages (keys named in `ragfr.retrieval.passage_keys`) and translates the decision back
(`ChatView`: the passages kept or shown, the French reply, the keys on each source).

Only passages this process made count (ragfr.owui.runtime.provenance): a passage's `ragfr_` keys are read
when it carries a provenance token this process issued, never because a stored chunk's metadata or a client's
file metadata names them. The token is stripped from every passage the gate passes on.

Fails closed: a request that searched attached knowledge but got no passage ragfr scored, a search ragfr
could not run (`ragfr.owui.runtime.chat_search`'s marker passage: busy, failed or refused, each with its own
message), or an error inside the gate, is refused. A failure shows the analyst its kind and an incident id
(8 hex digits); the gate log's line with that id holds the full reason.
"""

from __future__ import annotations

import json
import logging
import math
import secrets
import time
import uuid
from collections.abc import Awaitable, Callable, Iterator
from dataclasses import dataclass
from typing import Any

from ragfr import metrics
from ragfr.analysis.french import query_terms
from ragfr.analysis.subject import Absence
from ragfr.db.vmetadata import reserved_keys, without_reserved
from ragfr.errors import first_line
from ragfr.gate import fitted, rank, subject
from ragfr.gate.rank import Decision, GateConfig, Outcome, Scale, scale_for
from ragfr.owui.runtime.provenance import made_here, without_token
from ragfr.retrieval import passage_keys as keys

log = logging.getLogger("ragfr.gate")

REFUSAL = "Les documents joints ne permettent pas de répondre à cette question."
# Outcome CAUTION: the analyst's line, shown above the reply as Open WebUI's status line (caution_status), and a
# source of its own, listed with the citations and read by the model with the passages (its instruction to say so
# when they do not hold the answer).
CAUTION_LINE = "Prudence : les documents joints ne contiennent peut-être pas la réponse."
CAUTION = CAUTION_LINE + " Si les extraits ne permettent pas de répondre, dis-le clairement au lieu de deviner."
CAUTION_SOURCE = "ragfr : prudence"  # the name of the caution's source: the chip the analyst sees and opens
NO_PASSAGE = "Aucun passage des documents joints ne correspond à la question."
CLOSEST = "Passages les plus proches :"
# When the search itself could not run: not "the documents do not answer", which would be a claim about them.
UNAVAILABLE = {
    "busy": "La recherche dans les documents joints est saturée pour le moment : aucune réponse n'a été "
            "produite. Réessayez dans quelques instants.",
    "failed": "La recherche dans les documents joints a échoué : aucune réponse n'a été produite. Réessayez ; "
              "si l'erreur persiste, signalez-la à l'administrateur.",
    # The database does not answer (ragfr.owui.runtime.native: refused or lost connections), not a full queue.
    "unavailable": "La recherche dans les documents joints est indisponible : leur base de données ne répond pas. "
                   "Aucune réponse n'a été produite. Réessayez dans quelques minutes ; si l'erreur persiste, "
                   "signalez-la à l'administrateur.",
    "refused": "Cette question ne peut pas être recherchée dans les documents joints telle qu'elle est écrite "
               "(vide, trop longue ou contenant un caractère invalide) : reformulez-la.",
}
# Under an UNAVAILABLE message: the id the operator finds in the gate log with the full reason
# (docs/runbooks/monitoring.md), never the reason itself (a DSN, a host, a server's error line).
INCIDENT_LINE = "Référence pour l'administrateur : {incident}"
MAX_KEPT = 3  # passages the model receives at most
MAX_SHOWN = 3  # closest passages listed under a refusal
EXCERPT_CHARS = 220
METADATA_KEY = keys.GATE  # where the decision travels in Open WebUI's request metadata
SEARCHED_TYPES = ("collection", "file")


@dataclass
class Passage:
    source: int  # index in Open WebUI's sources list
    index: int  # index inside that source's documents
    text: str
    metadata: dict[str, Any]
    score: float | None = None

    @property
    def file(self) -> str:
        m = self.metadata
        return str(m.get("name") or m.get("source") or m.get("file_id") or "?")


@dataclass
class ChatView:
    """What the chat shows of the gate's Decision (not a second decision): which passages go on, the reply
    that replaces the model's when refused, and the reason the analyst may see (the decision's own, or for a
    failure its kind and incident id: the full reason stays in the gate log)."""

    decision: Decision[Passage]
    shown: list[Passage]
    message: str | None = None
    public_reason: str | None = None
    incident: str | None = None

    @property
    def reason(self) -> str:
        return self.public_reason or self.decision.reason

    def to_json(self) -> dict[str, Any]:
        """What travels in Open WebUI's request metadata (METADATA_KEY) to `refusal_response`."""
        return {**self.decision.summary(), "reason": self.reason, "incident": self.incident,
                "passages": passages_json(self.shown), "message": self.message}

    def source_metadata(self) -> dict[str, Any]:
        d = self.decision
        return {keys.GATE: d.outcome.value, keys.GATE_RULE: d.rule, keys.GATE_PROBABILITY: d.probability,
                keys.GATE_SCALE: d.scale, keys.GATE_TOP_SCORE: d.top_score,
                keys.GATE_EVIDENCE_THRESHOLD: d.evidence_threshold, keys.GATE_NOISE_FLOOR: d.noise_floor,
                keys.GATE_REASON: self.reason}


def passages_json(shown: list[Passage]) -> list[dict[str, Any]]:
    return [{"file": p.file, "chunk": p.metadata.get(keys.CHUNK_ID), "score": p.score,
             "rrf_score": p.metadata.get(keys.RRF_SCORE), "relevance": p.metadata.get(keys.RELEVANCE)} for p in shown]


def searches_knowledge(files: list[dict[str, Any]] | None) -> bool:
    """Attachments Open WebUI retrieves from by search (not whole documents put in the context)."""
    return any(
        isinstance(f, dict) and f.get("type") in SEARCHED_TYPES and f.get("context") != "full" for f in files or []
    )


def _passages(sources: list[dict[str, Any]]) -> list[Passage]:
    out = []
    for s, source in enumerate(sources):
        metadatas = source.get("metadata") or []
        for i, text in enumerate(source.get("document") or []):
            meta = metadatas[i] if i < len(metadatas) and isinstance(metadatas[i], dict) else {}
            if keys.RRF_SCORE in meta and made_here(meta):
                out.append(Passage(s, i, str(text), meta))
    return out


def _unavailable(sources: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """The marker passages of searches ragfr could not run, in order: only those this process made."""
    return [m for source in sources for m in source.get("metadata") or []
            if isinstance(m, dict) and m.get(keys.SEARCH_UNAVAILABLE) in UNAVAILABLE and made_here(m)]


def unavailable_message(kind: str, incident: str) -> str:
    return f"{UNAVAILABLE[kind]}\n\n{INCIDENT_LINE.format(incident=incident)}"


def unavailable_verdict(markers: list[dict[str, Any]]) -> ChatView:
    """Refused because a search did not run. The most serious kind sets the message and the incident shown
    (failed, then unavailable, then busy, then refused); every marker's reason and incident go into the
    decision's reason, which only the gate log prints."""
    kinds = [str(m[keys.SEARCH_UNAVAILABLE]) for m in markers]
    kind = next(k for k in ("failed", "unavailable", "busy", "refused") if k in kinds)
    incident = next(str(m.get(keys.INCIDENT) or "") for m in markers if m[keys.SEARCH_UNAVAILABLE] == kind)
    incident = incident or secrets.token_hex(4)
    reason = "; ".join(sorted({f"{m[keys.SEARCH_UNAVAILABLE]} (incident {m.get(keys.INCIDENT)}): "
                               f"{m.get(keys.UNAVAILABLE_REASON, '')}" for m in markers}))
    decision: Decision[Passage] = Decision.refused_unjudged(f"search {kind}: {reason}")
    return ChatView(decision, [], unavailable_message(kind, incident),
                       public_reason=f"search {kind}: incident {incident}", incident=incident)


def error_verdict(exc: Exception) -> ChatView:
    """The gate itself failed: refused (fail closed), shown as a failure with an incident id."""
    incident = secrets.token_hex(4)
    log.exception("ragfr: evidence gate failed; refusing (incident %s)", incident)
    decision: Decision[Passage] = Decision.refused_unjudged(
        f"evidence gate error: {type(exc).__name__}: {first_line(exc)}")
    return ChatView(decision, [], unavailable_message("failed", incident),
                       public_reason=f"evidence gate failed: incident {incident}", incident=incident)


def _logit(p: float) -> float:
    p = min(max(float(p), 1e-12), 1 - 1e-12)
    return math.log(p / (1 - p))


def assess(passages: list[Passage], scale: Scale) -> ChatView:
    """The gate's decision on Open WebUI's passages (`ragfr.gate.rank.decide`, as `ragfr ask`), and the
    passages it keeps (above) or shows (below), in Open WebUI's order."""
    gate_cfg = GateConfig.for_scale(scale)
    if scale == "cross-encoder":
        for p in passages:
            p.score = _logit(p.metadata["score"]) if p.metadata.get("score") is not None else None
        tops = [p.score for p in passages if p.score is not None]
    else:
        for p in passages:
            p.score = float(p.metadata[keys.RRF_SCORE])
        tops = [float(p.metadata.get(keys.TOP_RRF_SCORE, p.score or 0.0)) for p in passages]
    model, features = search_evidence(passages)
    decision = rank.decide([(p, p.score) for p in passages], gate_cfg, top=max(tops, default=None),
                           evidence=features, embedding_model=model, absence=search_absence(passages))
    if decision.grounded:
        return ChatView(decision, decision.kept[:MAX_KEPT])
    shown = passages[:MAX_SHOWN]
    return ChatView(decision, shown, refusal_text(shown, decision.reason_fr))


def search_absence(passages: list[Passage]) -> Absence | None:
    """The subject no searched document names, as the searches behind the passages found it (the subject rule,
    ragfr.gate.subject): with several queries, the most favourable (the least severe absence; none when a
    search found its subject), as the features are read. A value that is not an absence reads as none."""
    found = {str(p.metadata.get(keys.ABSENT_SUBJECT) or "null") for p in passages}
    absences = []
    for text in sorted(found):
        try:
            absences.append(subject.from_json(json.loads(text)))
        except (ValueError, KeyError, TypeError):
            absences.append(None)
    return subject.least(absences)


def search_evidence(passages: list[Passage]) -> tuple[str | None, dict[str, float] | None]:
    """(embedding model, evidence features) of the searches behind the passages. Open WebUI may have run
    several queries: the most favourable search's features are read (as the rank rule reads the best top
    score), by the fitted gate of the model when there is one."""
    model = next((str(p.metadata[keys.EMBEDDING_MODEL]) for p in passages if p.metadata.get(keys.EMBEDDING_MODEL)),
                 None)
    found = {str(p.metadata[keys.EVIDENCE]) for p in passages if p.metadata.get(keys.EVIDENCE)}
    candidates = [json.loads(text) for text in sorted(found)]
    if not candidates:
        return model, None
    model_gate = fitted.load(model) if model else None
    if model_gate is None:
        return model, candidates[0]
    return model, max(candidates, key=model_gate.probability)


def refusal_text(shown: list[Passage], reason_fr: str | None = None) -> str:
    """The reply in place of the model's: REFUSAL, why in French when the gate knows (the subject no document
    names), then the closest passages."""
    head = f"{REFUSAL} {reason_fr}" if reason_fr else REFUSAL
    if not shown:
        return f"{head}\n\n{NO_PASSAGE}"
    lines = [head, "", CLOSEST]
    for n, p in enumerate(shown, 1):
        excerpt = " ".join(p.text.split())
        if len(excerpt) > EXCERPT_CHARS:
            excerpt = excerpt[:EXCERPT_CHARS].rsplit(" ", 1)[0] + " …"
        lines.append(f"{n}. **{p.file}** — « {excerpt} »")
    return "\n".join(lines)


def _select(sources: list[dict[str, Any]], verdict: ChatView, keep_others: bool) -> list[dict[str, Any]]:
    """Open WebUI's sources reduced to the verdict's passages (same order), each carrying the decision."""
    wanted = {(p.source, p.index) for p in verdict.shown}
    stamp = verdict.source_metadata()
    out = []
    for s, source in enumerate(sources):
        metadatas = source.get("metadata") or []
        docs = source.get("document") or []
        is_ragfr = any(isinstance(m, dict) and keys.RRF_SCORE in m and made_here(m) for m in metadatas)
        if not is_ragfr:
            if keep_others:
                out.append(_unreserved(source))
            continue
        idx = [i for i in range(len(docs)) if (s, i) in wanted]
        if not idx:
            continue
        reduced = {**source, "document": [docs[i] for i in idx],
                   "metadata": [{**without_token(metadatas[i]), **stamp} for i in idx]}
        if isinstance(source.get("distances"), list):
            reduced["distances"] = [source["distances"][i] for i in idx if i < len(source["distances"])]
        out.append(reduced)
    return out


def _unreserved(source: dict[str, Any]) -> dict[str, Any]:
    """Another source passed on without the `ragfr_` keys its stored metadata may hold: they are not the
    search's, and nothing downstream (the citations, the load tool) may read them as the gate's."""
    metadatas = source.get("metadata")
    if not isinstance(metadatas, list) or not any(isinstance(m, dict) and reserved_keys(m) for m in metadatas):
        return source
    return {**source, "metadata": [without_reserved(m) if isinstance(m, dict) else m for m in metadatas]}


def gate(metadata: dict[str, Any], sources: list[dict[str, Any]], *, question: str, searched: bool,
         reranked: bool) -> list[dict[str, Any]]:
    """Decide on the retrieved passages; return the sources the model (or the refusal) gets.

    Not gated (sources returned unchanged): no attachment searched and no passage from ragfr."""
    passages, markers = _passages(sources), _unavailable(sources)
    if not passages and not markers and not (searched and searches_knowledge(metadata.get("files"))):
        return sources
    started = time.perf_counter()
    try:
        verdict = unavailable_verdict(markers) if markers else assess(passages, scale_for(reranked))
    except Exception as exc:  # fail closed: no evidence we can vouch for, no model call
        verdict = error_verdict(exc)
    metadata[METADATA_KEY] = verdict.to_json()
    metrics.gate_decision("chat", verdict.decision.outcome.value, verdict.decision.rule)
    _log(verdict, metadata, question, passages, started)
    if verdict.decision.outcome is Outcome.CAUTION:
        why = verdict.decision.reason_fr
        return [*_select(sources, verdict, keep_others=True),
                {"source": {"id": "ragfr-evidence-gate", "name": CAUTION_SOURCE},
                 "document": [f"{CAUTION_LINE} {why}{CAUTION[len(CAUTION_LINE):]}" if why else CAUTION],
                 "metadata": [verdict.source_metadata()]}]
    if verdict.decision.grounded:
        return _select(sources, verdict, keep_others=True)
    if not verdict.shown:
        # Nothing to show: one citation-less source so the decision still travels with the message.
        return [{"source": {"id": "ragfr-evidence-gate", "name": "ragfr evidence gate"},
                 "document": [verdict.reason], "metadata": [verdict.source_metadata()]}]
    return _select(sources, verdict, keep_others=False)


def _log(verdict: ChatView, metadata: dict[str, Any], question: str, passages: list[Passage],
         started: float) -> None:
    """One JSON line per decision, with the FULL reason (a failure's too, beside its incident id)."""
    log.info(json.dumps({
        "event": "gate", **verdict.decision.summary(), "incident": verdict.incident,
        "passages": passages_json(verdict.shown), "query_terms": query_terms(question),
        "vector_scope": sorted({str(p.metadata[keys.VECTOR_SCOPE]) for p in passages
                                if p.metadata.get(keys.VECTOR_SCOPE)}),
        "chat_id": metadata.get("chat_id") or None, "message_id": metadata.get("message_id"),
        "ms": round((time.perf_counter() - started) * 1000, 3),
    }, ensure_ascii=False, default=str))


def refused(metadata: dict[str, Any] | None) -> dict[str, Any] | None:
    decision = (metadata or {}).get(METADATA_KEY)
    return decision if isinstance(decision, dict) and not decision.get("grounded") else None


def caution_status(metadata: dict[str, Any] | None) -> dict[str, Any] | None:
    """The status event that puts CAUTION_LINE above the reply when the gate cautioned (Open WebUI shows a
    message's last status without a click and keeps it with the chat); None otherwise."""
    decision = (metadata or {}).get(METADATA_KEY)
    if not isinstance(decision, dict) or decision.get("decision") != Outcome.CAUTION.value:
        return None
    why = decision.get("reason_fr")
    line = caution_line(why if isinstance(why, str) else None)
    return {"type": "status", "data": {"action": "ragfr_caution", "description": line, "done": True}}


def caution_line(reason_fr: str | None) -> str:
    """The status line above a cautioned reply: CAUTION_LINE, or when the gate knows why (the subject no document
    names) that reason itself, short enough that Open WebUI's one-line status shows the subject unclipped:
    « Prudence : aucun des documents joints ne mentionne « voiture ». »."""
    if not reason_fr:
        return CAUTION_LINE
    return f"Prudence : {reason_fr[:1].lower()}{reason_fr[1:]}"


async def show_caution(metadata: dict[str, Any] | None,
                       get_event_emitter: Callable[[dict[str, Any]], Awaitable[Any]]) -> None:
    """Emits caution_status through Open WebUI's emitter for this reply. Best effort: the caution source and the
    model's instruction already travel with the passages, so a failed emit is logged, never raised."""
    status = caution_status(metadata)
    if status is None or metadata is None:
        return
    try:
        emitter = await get_event_emitter(metadata)
        if emitter:
            await emitter(status)
    except Exception as exc:  # the answer must not fail for want of its status line
        log.warning(json.dumps({"event": "caution_status_failed", "chat_id": metadata.get("chat_id"),
                                "message_id": metadata.get("message_id"),
                                "error": f"{type(exc).__name__}: {first_line(exc)}"}, ensure_ascii=False))


def refusal_response(form_data: dict[str, Any], metadata: dict[str, Any] | None,
                     streaming_response: Callable[..., Any]) -> Any | None:
    """The reply that replaces the chat model's below the gate (OpenAI format, as Open WebUI converts
    Ollama's); None above it or when nothing was gated."""
    decision = refused(metadata)
    if decision is None:
        return None
    text = str(decision.get("message") or REFUSAL)
    model = str(form_data.get("model") or "")
    if form_data.get("stream"):
        return streaming_response(_sse(model, text), media_type="text/event-stream",
                                  headers={"X-Ragfr-Gate": "refuse"})
    return {**_envelope(model, "chat.completion"),
            "choices": [{"index": 0, "message": {"role": "assistant", "content": text}, "finish_reason": "stop"}],
            "usage": {"prompt_tokens": 0, "completion_tokens": 0, "total_tokens": 0}}


def _envelope(model: str, obj: str, ident: str | None = None) -> dict[str, Any]:
    return {"id": ident or f"ragfr-gate-{uuid.uuid4()}", "object": obj, "created": int(time.time()),
            "model": model}


def _sse(model: str, text: str) -> Iterator[str]:
    ident = f"ragfr-gate-{uuid.uuid4()}"
    first = {**_envelope(model, "chat.completion.chunk", ident),
             "choices": [{"index": 0, "delta": {"role": "assistant", "content": text}, "finish_reason": None}]}
    last = {**_envelope(model, "chat.completion.chunk", ident),
            "choices": [{"index": 0, "delta": {}, "finish_reason": "stop"}]}
    yield f"data: {json.dumps(first, ensure_ascii=False)}\n\n"
    yield f"data: {json.dumps(last)}\n\n"
    yield "data: [DONE]\n\n"
