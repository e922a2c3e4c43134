"""A TEST DOUBLE of the Ollama HTTP API. It is not a language model and must never serve users.

It exists because no Ollama binary can run where the tests run: Open WebUI needs an Ollama-speaking
server for embeddings and chat. Embeddings are real (the offline multilingual-e5-small model through
`ragfr.embed`); chat answers are EXTRACTIVE: the context sentence that shares the most French lexemes
with the question, with its source id. Every response carries the header `X-Ragfr-Test-Double: 1`,
every model name ends in `-test-double`, and the server prints a banner saying so.

    python -m ragfr_tools.devserver --port 11434
"""
