"""PostgreSQL's binary COPY format for document_chunk rows: the loaders' fast path (no float formatting in
Python, no vector parsing in the server)."""

from __future__ import annotations

import struct

import numpy as np

# signature, flags, header extension length; then tuples; then TRAILER
HEADER = b"PGCOPY\n\xff\r\n\x00" + struct.pack("!ii", 0, 0)
TRAILER = struct.pack("!h", -1)


def field(data: bytes) -> bytes:
    return struct.pack("!i", len(data)) + data


def vector(values: np.ndarray) -> bytes:
    """pgvector's vector_recv: int16 dimensions, int16 unused, then float4 values, all in network order."""
    return struct.pack("!hh", values.shape[0], 0) + values.astype(">f4").tobytes()


def jsonb(text: str) -> bytes:
    """jsonb_recv: version 1, then the JSON text."""
    return b"\x01" + text.encode()


def row(*fields: bytes) -> bytes:
    return struct.pack("!h", len(fields)) + b"".join(field(f) for f in fields)
