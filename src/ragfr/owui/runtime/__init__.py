"""What runs inside Open WebUI's process: the search adapter (`native`), the chat steps (`chat_search`,
`chat_gate`), the French tokenizer, the vector checks and the schema check the patched files call. Never
imports `ragfr.owui.patcher` (the patch engine is not needed once Open WebUI runs)."""
