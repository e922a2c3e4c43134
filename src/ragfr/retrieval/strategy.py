"""The vector arm's choice between filter-first exact scoring and the HNSW walk, by estimated cost.

With hard filters, pgvector's iterative HNSW scan keeps walking the graph until LIMIT rows pass: when a
fraction s of the indexed rows passes, it visits about depth / s candidates (never fewer than ef_search).
Exact scoring reads and scores every passing row instead. With n passing rows out of N indexed ones,
c_visit the cost of one visited candidate and c_exact that of one exactly scored row:

    exact costs  n * c_exact
    HNSW costs   c_visit * max(ef_search, depth * N / n)

Exact is the cheaper one exactly when n <= max(r * ef_search, sqrt(r * depth * N)), r = c_visit / c_exact
(the first term covers n large enough that the walk is no longer than an unfiltered one; the second the
selective filters, where the walk grows as the filter narrows).

r was measured at 100k chunks of 1024 dims on the half-precision index (`python -m
ragfr_tools.bench.filtercost`; per-row and per-visit costs and r by filter class in
docs/bench/filter-cost-lowrank-100k-halfvec.json): an exactly scored row is a random read (its heap row
found through the metadata GIN index, its vector read from TOAST), a visited candidate of the walk costs
about ten of them at the 10 % class, where the choice is close, so r = 10.
At the defaults (ef_search 100, depth 50) the threshold is 1,000 rows up to 2,000 indexed rows, 7,071 at
100k and 22,360 at 1M: at 100k a 1 % filter is scored exactly and a 10 % filter walks the graph.

A declared filter (ragfr.vector_index.graphs) has its own graph: a partial index holding only the rows it
passes. N is then that graph's rows, not the whole graph's, and the walk no longer grows as the filter
narrows: at n close to N, exact wins only up to r * ef_search rows.

Which side of the threshold a filter falls on: with metadata conditions the planner's estimate decides
(ragfr.retrieval.semantic; counting the rows would cost random reads, as much as a walk near the
threshold); without, the collections' row count. When exact is chosen, the statement that scores the
passing rows also counts them, capped at the threshold + 1, and falls back to the walk past it.
"""

from __future__ import annotations

import math


def exact_threshold(indexed: int, depth: int, ef_search: int, cost_ratio: float) -> int:
    """The largest number of passing rows for which exact scoring is estimated cheaper than the walk.

    Never below `depth`: when at most depth rows pass, the walk would end only at its tuple budget, and
    exact scoring returns every one of them."""
    walk_floor = cost_ratio * ef_search
    selective = math.sqrt(cost_ratio * depth * max(indexed, 0))
    return max(depth, int(max(walk_floor, selective)))


# The lexical arm under metadata conditions has the same two strategies, with other costs:
#   filter first   the GIN indexes find the rows that match a query term AND pass the filters, and each one's
#                  tsvector is scored: n * c_row (n passing rows; the share of them matching a term varies);
#   block index    the unfiltered top scores (migrations/0010, ragfr.lexical_index.blockmax) walked through the
#                  filter in rank order, one primary-key probe per candidate, until `depth` pass: about
#                  depth * N / n probes of c_probe each, on top of the unfiltered arm's cost.
# Equal when n = sqrt(r * depth * N), r = c_probe / c_row. Measured at 100k chunks by
# `python -m ragfr_tools.bench.lexfilter` (c_row, c_probe and r by filter class in
# docs/bench/lexical-filter-cost-100k.json; the 10 % class, where the choice matters, sets it): r = 5: at 100k the
# threshold is 5,000 passing rows (a 1 % filter scores first, a 10 % one walks), at 1M 15,811.


def lexical_filter_first_threshold(searched: int, depth: int, cost_ratio: float) -> int:
    """The largest number of passing rows for which the lexical arm filters first."""
    return max(depth, int(math.sqrt(cost_ratio * depth * max(searched, 0))))
