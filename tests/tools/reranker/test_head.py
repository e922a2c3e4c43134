"""The mean-pooling head saves as a CrossEncoder folder that ragfr's production reranker loads offline and
scores identically (a tiny random BERT, so the test takes seconds)."""

from __future__ import annotations

import dataclasses
from pathlib import Path

import pytest

from ragfr_tools.reranker import train
from ragfr_tools.reranker.hyper import HYPER

pytest.importorskip("sentence_transformers")


def tiny_base(path: Path) -> Path:
    import torch
    from tokenizers import Tokenizer, models, pre_tokenizers, processors
    from transformers import BertConfig, BertModel, PreTrainedTokenizerFast

    words = ["<s>", "<pad>", "</s>", "<unk>", "qui", "a", "écrit", "victor", "hugo", "la", "pluie", "tombe"]
    tok = Tokenizer(models.WordLevel({w: i for i, w in enumerate(words)}, unk_token="<unk>"))
    tok.pre_tokenizer = pre_tokenizers.Whitespace()
    tok.post_processor = processors.TemplateProcessing(single="<s> $A </s>", pair="<s> $A </s> </s> $B </s>",
                                                       special_tokens=[("<s>", 0), ("</s>", 2)])
    fast = PreTrainedTokenizerFast(tokenizer_object=tok, bos_token="<s>", eos_token="</s>", sep_token="</s>",
                                   cls_token="<s>", unk_token="<unk>", pad_token="<pad>", model_max_length=64)
    torch.manual_seed(0)
    cfg = BertConfig(vocab_size=len(words), hidden_size=32, num_hidden_layers=1, num_attention_heads=2,
                     intermediate_size=64, max_position_embeddings=64, pad_token_id=1)
    BertModel(cfg, add_pooling_layer=False).save_pretrained(path)
    fast.save_pretrained(path)
    return path


def test_the_mean_head_round_trips_through_ragfrs_reranker(tmp_path: Path) -> None:
    import torch

    from ragfr.retrieval.rerank import CrossEncoderReranker

    h = dataclasses.replace(HYPER, head="mean", max_length=32)
    ce = train.build_cross_encoder(tiny_base(tmp_path / "base"), h)
    ce.save_pretrained(str(tmp_path / "model"))
    pairs = [("qui a écrit", "victor hugo a écrit"), ("qui a écrit", "la pluie tombe")]
    before = [float(s) for s in ce.predict(pairs, activation_fn=torch.nn.Identity())]
    after = CrossEncoderReranker(str(tmp_path / "model"), max_length=32).score(pairs[0][0], [p for _, p in pairs])
    assert after == pytest.approx(before, abs=1e-6)
    assert before[0] != pytest.approx(before[1], abs=1e-6)  # the head reads the content, not a constant
    with pytest.raises(SystemExit, match="head"):
        train.build_cross_encoder(tmp_path / "base", dataclasses.replace(h, head="max"))
