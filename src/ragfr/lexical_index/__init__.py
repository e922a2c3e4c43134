"""The lexical index: its BM25 scan, block-max, and its recount and repair."""
