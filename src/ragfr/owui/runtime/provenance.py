"""Which passages this process made: the only ones whose `ragfr_` keys the chat's evidence gate reads (issue 47
item 7).

A key's name proves nothing. Open WebUI hands the gate a chunk's stored metadata as is on its own read paths
(full-context mode reads whole collections, a search with hybrid search off reads PgvectorClient.search), and a
chat request carries a file's metadata of the client's choosing: any of them can hold `ragfr_search_unavailable`
or `ragfr_rrf_score`. Dropping the keys on writes (ragfr.owui.runtime.vectors) and scrubbing the stored ones
(migration 0017) closes the known doors; this closes the class: each result ragfr's search step makes (the
adapter's scored hits, a marker of a search that could not run) carries a token drawn at random in this
process and remembered here, and the gate reads the `ragfr_` keys of a passage only when its token is one this
process issued. A stored value cannot hold a token not yet drawn; the gate strips the token from every passage
it passes on, so none reaches the browser or a saved chat.

Tokens live in memory, bounded (ISSUED_MAX, oldest forgotten first): a search's passages reach the gate within
the same request, seconds after the token is drawn, in the same process (one request never spans two workers).
"""

from __future__ import annotations

import secrets
import threading
from collections import OrderedDict
from collections.abc import Mapping
from typing import Any

from ragfr.retrieval import passage_keys as keys

ISSUED_MAX = 50_000  # tokens remembered; one per search result, a chat question makes a handful

_issued: OrderedDict[str, None] = OrderedDict()
_lock = threading.Lock()


def issue() -> str:
    """A new token for one result's passages (the value of passage_keys.PROVENANCE)."""
    token = secrets.token_hex(16)
    with _lock:
        _issued[token] = None
        while len(_issued) > ISSUED_MAX:
            _issued.popitem(last=False)
    return token


def made_here(metadata: Mapping[str, Any] | None) -> bool:
    """Whether this passage's `ragfr_` keys were written by this process's search step."""
    token = metadata.get(keys.PROVENANCE) if isinstance(metadata, Mapping) else None
    if not isinstance(token, str):
        return False
    with _lock:
        return token in _issued


def without_token(metadata: Mapping[str, Any]) -> dict[str, Any]:
    """The passage's metadata as the gate passes it on: everything but the token."""
    return {k: v for k, v in metadata.items() if k != keys.PROVENANCE}
