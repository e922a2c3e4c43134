"""The one-line marker the patcher writes at the top of each file it patched.

The marker records both versions and two hashes: the pristine file it started from and the patched
text below the marker. The second hash makes "already patched" provable: a file that carries a marker
but was edited afterwards does not verify, so neither the patcher nor `ragfr owui check` trusts it.
"""

from __future__ import annotations

import hashlib
import re
from dataclasses import dataclass

PREFIX = "# ragfr-owui-patch"
_PATTERN = re.compile(
    r"^# ragfr-owui-patch (?P<patch>\S+) for open-webui (?P<owui>\S+); "
    r"pristine sha256 (?P<pristine>[0-9a-f]{64}); patched sha256 (?P<patched>[0-9a-f]{64})$"
)


def sha256_text(text: str) -> str:
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


@dataclass(frozen=True)
class Marker:
    patch_version: str
    owui_version: str
    pristine_sha256: str
    patched_sha256: str

    def line(self) -> str:
        return (
            f"{PREFIX} {self.patch_version} for open-webui {self.owui_version}; "
            f"pristine sha256 {self.pristine_sha256}; patched sha256 {self.patched_sha256}"
        )


def stamp(body: str, *, patch_version: str, owui_version: str, pristine_sha256: str) -> str:
    """The patched body with its marker line in front."""
    marker = Marker(patch_version, owui_version, pristine_sha256, sha256_text(body))
    return marker.line() + "\n" + body


def read(text: str) -> tuple[Marker | None, str]:
    """Split a file into (marker, body). A file without a marker line returns (None, text)."""
    first, sep, rest = text.partition("\n")
    if not first.startswith(PREFIX):
        return None, text
    match = _PATTERN.match(first)
    if match is None:
        # A damaged marker must not be mistaken for a pristine file either.
        return Marker("?", "?", "0" * 64, "0" * 64), rest
    return Marker(match["patch"], match["owui"], match["pristine"], match["patched"]), rest if sep else ""


def intact(marker: Marker, body: str) -> bool:
    """True when the text under the marker is exactly what the patcher wrote."""
    return sha256_text(body) == marker.patched_sha256
