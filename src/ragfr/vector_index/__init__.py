"""The vector index: its precision, its concurrent build, the per-filter and per-collection graphs, the
settings and statements of a walk (scan), and the lock its changers hold."""
