"""STAND-IN cross-encoder weights: no cross-encoder/reranker weights are available offline on our build
machines (../shared/ENGINEERING-NOTES.md), so tests that exercise reranking PLUMBING (loading, top-N in,
keep-N out, scores attached, calibration arithmetic, cache layout) use a tiny randomly initialised BERT
cross-encoder. Its scores mean nothing: no test may read quality into them.
"""

from __future__ import annotations

from pathlib import Path


def tiny_cross_encoder(path: Path, words: tuple[str, ...] = ("sinistre", "franchise"),
                       max_length: int | None = None) -> Path:
    """Save a 1-layer, 8-wide BERT sequence classifier (one logit) and its tokenizer to `path`. `max_length`
    is saved as the tokenizer's model_max_length (the maximum a CrossEncoder loaded without one keeps);
    None leaves the model's 512 positions."""
    from transformers import BertConfig, BertForSequenceClassification, BertTokenizerFast

    path.mkdir(parents=True)
    vocab = path / "vocab.txt"
    vocab.write_text("\n".join(["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]", *words]) + "\n")
    saved = {} if max_length is None else {"model_max_length": max_length}
    # vocab=, not vocab_file=: under transformers 5 the latter saves a tokenizer.json without the words, so
    # every word would load as [UNK] and passages of one length would score the same.
    BertTokenizerFast(vocab=str(vocab), **saved).save_pretrained(path)
    config = BertConfig(vocab_size=5 + len(words), hidden_size=8, num_hidden_layers=1, num_attention_heads=1,
                        intermediate_size=8, num_labels=1)
    BertForSequenceClassification(config).save_pretrained(path)
    return path


def tiny_cross_encoder_cache(cache: Path, repo: str, words: tuple[str, ...] = ("ecole", "publique")) -> Path:
    """A Hugging Face hub cache at `cache` (HF_HOME/hub, or SENTENCE_TRANSFORMERS_HOME) holding the tiny
    cross-encoder under the name `repo`, at commit 0*40 with refs/main: what an offline load by name finds."""
    commit = "0" * 40
    root = cache / f"models--{repo.replace('/', '--')}"
    (root / "refs").mkdir(parents=True)
    (root / "refs" / "main").write_text(commit)
    return tiny_cross_encoder(root / "snapshots" / commit, words=words)
