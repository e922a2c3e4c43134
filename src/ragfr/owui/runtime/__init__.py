"""What runs inside Open WebUI's process: the search adapter (`native`), the chat steps (`chat_search`,
`chat_gate`), the French tokenizer, the vector checks and the schema check the patched files call. Never
imports `ragfr.owui.patcher` (the patch engine is not needed once Open WebUI runs)."""

# Imported at Open WebUI's start (its pgvector client calls the schema check): the retrieval arms come with it
# and declare their metric series at 0 (ragfr.retrieval.arms), so /metrics shows them before the first search.
import ragfr.retrieval  # noqa: F401
