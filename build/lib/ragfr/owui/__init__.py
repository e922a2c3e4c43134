"""Open WebUI integration: the patch engine, its check, and the adapter the patched code calls.

The patched Open WebUI files only delegate to this package (`native`, `tokenize`, `vectors`); every
retrieval rule lives in `ragfr.retrieval` and `ragfr.analysis`, never here.
"""
