"""The metadata keys of the gate's contract in Open WebUI, named once for their writers and their reader.

Writers: the adapter stamps a search's evidence on every hit it hands to Open WebUI (ragfr.owui.runtime.native), and
the chat's search step writes a marker passage when a search could not run (ragfr.owui.runtime.chat_search). Reader:
the chat's evidence gate (ragfr.owui.runtime.chat_gate), which then writes its decision on the passages it lets
through (the `GATE*` keys, read by the load tool and the tests). Every key is in the reserved `ragfr_`
namespace (ragfr.db.vmetadata): never stored with a chunk, dropped when read back from one, so a document
cannot set what the gate reads.
"""

from __future__ import annotations

from ragfr.db.vmetadata import RESERVED_PREFIX

# A search's evidence, on each of its hits (native.ranks_metadata).
CHUNK_ID = "ragfr_chunk_id"
RANK = "ragfr_rank"
RRF_SCORE = "ragfr_rrf_score"  # this hit's fused score; its presence marks a passage ragfr scored
# The search's best RRF score, on every hit: Open WebUI keeps only a few hits after its own re-scoring, and
# the gate must judge the search, not the survivors.
TOP_RRF_SCORE = "ragfr_top_rrf_score"
# The relevance the analyst reads beside the passage (ragfr.gate.relevance), 0-1: also the passage's `distances`
# entry, which Open WebUI shows as a percentage and re-sorts merged results by.
RELEVANCE = "ragfr_relevance"
EMBEDDING_MODEL = "ragfr_embedding_model"
UNDERFILLED = "ragfr_underfilled"
UNDERFILL_REASON = "ragfr_underfill_reason"
VECTOR_SCOPE = "ragfr_vector_scope"
# The search's evidence features (ragfr.gate.features.FEATURES), JSON text, on every hit: the fitted gate
# reads the search's, like TOP_RRF_SCORE.
EVIDENCE = "ragfr_evidence"
# The question's subject no searched document names (ragfr.gate.subject.to_json), JSON text ("null": none), on
# every hit: the gate's subject rule reads the search's.
ABSENT_SUBJECT = "ragfr_absent_subject"


def arm_rank(arm: str) -> str:
    return f"{RESERVED_PREFIX}{arm}_rank"


def arm_score(arm: str) -> str:
    return f"{RESERVED_PREFIX}{arm}_score"


# On every passage ragfr's search step makes in Open WebUI (each result's hits, a marker): a token drawn in the
# process (ragfr.owui.runtime.provenance). The gate reads a passage's other keys only when its token is one the
# process issued: a stored or client-sent `ragfr_` key is never read as the search's.
PROVENANCE = "ragfr_provenance"

# A search that could not run (chat_search's marker passage). The reason stays in the process: the gate logs
# it with the incident id, and the analyst sees only the kind and the id.
SEARCH_UNAVAILABLE = "ragfr_search_unavailable"  # busy, failed or refused
UNAVAILABLE_REASON = "ragfr_search_unavailable_reason"
INCIDENT = "ragfr_incident"
COLLECTION = "ragfr_collection"

# The gate's decision, on each passage it lets through or shows (chat_gate.source_metadata).
GATE = "ragfr_gate"  # the outcome: answer, caution or refuse
GATE_RULE = "ragfr_gate_rule"  # evidence (the fitted gate) or rank
GATE_PROBABILITY = "ragfr_gate_probability"
GATE_SCALE = "ragfr_gate_scale"
GATE_TOP_SCORE = "ragfr_gate_top_score"
GATE_EVIDENCE_THRESHOLD = "ragfr_gate_evidence_threshold"
GATE_NOISE_FLOOR = "ragfr_gate_noise_floor"
GATE_REASON = "ragfr_gate_reason"
