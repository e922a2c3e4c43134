"""`make load`: a team of analysts chatting at once through the real Open WebUI HTTP API.

corpus.py picks a fixed French corpus (PIAF paragraphs from ../shared/datasets) and question pool; drive.py
runs N concurrent analysts for a while and classifies every reply (answered, refused and why, busy, failed,
error); __main__.py uploads the corpus to a knowledge base and reports each concurrency level. Tools, not
the package: it needs a checkout and the shared datasets.
"""
