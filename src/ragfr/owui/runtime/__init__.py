"""What runs inside Open WebUI's process: the search adapter (`native`), the chat steps (`chat_search`,
`chat_gate`), the French tokenizer, the vector checks and the schema check the patched files call. Never
imports `ragfr.owui.patcher` (the patch engine is not needed once Open WebUI runs)."""

# Nothing imported here: the owui-init image checks at build that the patcher and the tokenizer import in a
# plain Debian python3, which has neither psycopg nor numpy (Open WebUI's image has them). The arms' metric
# series come with ragfr.owui.runtime.schema, the module Open WebUI imports at its start.
