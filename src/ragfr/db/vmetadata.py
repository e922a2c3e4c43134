"""What a chunk's stored metadata (document_chunk.vmetadata) may not hold: any `ragfr_` key.

ragfr stamps `ragfr_*` keys on the hits it hands to Open WebUI (ragfr.retrieval.passage_keys) and the chat's
evidence gate decides on them. A stored key of that namespace would speak in the gate's name: a PDF whose
Info dictionary holds `ragfr_search_unavailable` made every chat that retrieved it refuse with the file's
text. So none is ever stored (`ragfr ingest` refuses them, Open WebUI's upload path drops them through the
patch) and none is read back (the adapter drops them before stamping its own).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

RESERVED_PREFIX = "ragfr_"


def is_reserved(key: object) -> bool:
    # Case-folded: a key the gate does not read today must not become one by a change of case either.
    return isinstance(key, str) and key.casefold().startswith(RESERVED_PREFIX)


def reserved_keys(metadata: Mapping[str, Any] | None) -> list[str]:
    return sorted(k for k in metadata or {} if is_reserved(k))


def without_reserved(metadata: Mapping[str, Any] | None) -> dict[str, Any]:
    """The metadata with every `ragfr_` key dropped (a new dict; None gives {})."""
    return {k: v for k, v in (metadata or {}).items() if not is_reserved(k)}
