"""retrieval.

The arms are imported with the package: each declares its metric series at 0 (ragfr.metrics.declare_arms),
and a process that serves metrics (the patched Open WebUI imports its evidence gate from here at start)
shows them before its first search, as every other series."""

from ragfr.retrieval import arms as arms
