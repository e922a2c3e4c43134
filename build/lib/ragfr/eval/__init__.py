"""Retrieval-quality evaluation: BEIR datasets, metrics, configurations and the CI gate."""
