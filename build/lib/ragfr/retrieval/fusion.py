"""Reciprocal Rank Fusion with a total order: equal scores are broken by chunk id, never by chance."""

from __future__ import annotations

from collections.abc import Mapping, Sequence


def rrf(rankings: Mapping[str, Sequence[str]], k: int = 60) -> list[tuple[str, float, dict[str, int]]]:
    """Fuse ranked id lists: score(d) = sum over arms of 1 / (k + rank), rank 1-based.

    Returns (id, score, {arm: rank}) sorted by score descending, then id ascending. An id repeated within
    one arm keeps its best rank.
    """
    ranks: dict[str, dict[str, int]] = {}
    for arm, ids in rankings.items():
        for rank, doc_id in enumerate(ids, start=1):
            ranks.setdefault(doc_id, {}).setdefault(arm, rank)
    fused = [(doc_id, sum(1.0 / (k + r) for r in arm_ranks.values()), arm_ranks) for doc_id, arm_ranks in ranks.items()]
    fused.sort(key=lambda item: (-item[1], item[0]))
    return fused
