"""Errors of the Open WebUI patch: each names the file, the anchor and the version it expected."""

from __future__ import annotations

from ragfr.errors import RagfrError


class PatchError(RagfrError):
    """The target cannot be patched (unknown version, missing anchor, modified file). Nothing was written."""

    exit_code = 2
