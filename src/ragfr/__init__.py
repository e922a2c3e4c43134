"""ragfr: French hybrid retrieval for Open WebUI on PostgreSQL + pgvector.

One implementation of every retrieval rule, shared by the `ragfr` CLI, the Open WebUI
patch (patches/open-webui) and the evaluation harness.
"""

__version__ = "0.2.1"
