"""Argument types shared by the benchmark commands."""

from __future__ import annotations

import argparse


def int_list(text: str) -> list[int]:
    try:
        values = [int(x.replace("_", "")) for x in text.split(",") if x.strip()]
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected comma-separated integers, got {text!r}") from None
    if not values or any(v < 1 for v in values):
        raise argparse.ArgumentTypeError(f"expected positive integers, got {text!r}")
    return values


def corpus_sizes(text: str) -> list[int]:
    values = int_list(text)
    if any(v % 1000 for v in values):
        raise argparse.ArgumentTypeError(f"sizes must be multiples of 1000 (exact 0.1 % class), got {text!r}")
    return values
