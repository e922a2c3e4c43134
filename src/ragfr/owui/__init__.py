"""Open WebUI integration, split by when the code runs.

- `patcher/`: build and start-up time. Applies the French patch to a stock Open WebUI tree (the owui-init
  container, `patches/open-webui/apply`) and checks it is active (`ragfr owui check`, the readiness probe).
- `runtime/`: inside Open WebUI's process. The adapter and chat steps the patched files call.

The runtime never imports the patcher (tests/packaging/test_layers.py): Open WebUI's process needs none of
the patch engine. The patched Open WebUI files only delegate to `runtime` (`native`, `tokenize`, `vectors`,
...); every retrieval rule lives in `ragfr.retrieval` and `ragfr.analysis`, never here.
"""
