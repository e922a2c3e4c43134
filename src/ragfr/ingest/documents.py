"""A document to ingest and the loaders that read one from a file (.txt, .md, .pdf, .jsonl)."""

from __future__ import annotations

import json
import os
import re
import stat
import unicodedata
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ragfr.errors import ConfigError

SUPPORTED_SUFFIXES = (".txt", ".md", ".pdf", ".jsonl")

# Control characters other than tab and newline: PDF extraction produces them, PostgreSQL text columns
# reject NUL outright, and the embedders read C strings.
_CONTROL = re.compile(r"[\x00-\x08\x0b\x0c\x0e-\x1f\x7f]")
# JSON's \uD800-\uDFFF escapes decode to lone surrogates, which no UTF-8 encoder (PostgreSQL's included) accepts.
_SURROGATE = re.compile(r"[\ud800-\udfff]")
_SPECIAL_KINDS = ((stat.S_ISFIFO, "a FIFO (named pipe)"), (stat.S_ISSOCK, "a socket"),
                  (stat.S_ISCHR, "a character device"), (stat.S_ISBLK, "a block device"))


@dataclass
class Document:
    """One unit of text from one source.

    source: where it came from; all documents of one source are replaced together when it changes
        (the absolute file path for files).
    doc_id: distinguishes documents sharing a source (a .jsonl line's "id", a PDF page); "" otherwise.
    name: what Open WebUI shows in citations (the file name by default).
    metadata: copied into every chunk's vmetadata.
    """

    text: str
    source: str
    doc_id: str = ""
    name: str = ""
    metadata: dict[str, Any] = field(default_factory=dict)

    def __post_init__(self) -> None:
        self.text = normalise_text(self.text)
        if not self.name:
            self.name = self.source.rsplit("/", 1)[-1] or self.source


def normalise_text(text: str) -> str:
    """NFC (PDFs often carry decomposed accents, which would never match a typed query), Unix newlines,
    no control characters."""
    text = unicodedata.normalize("NFC", text)
    text = text.replace("\r\n", "\n").replace("\r", "\n")
    return _CONTROL.sub(" ", text)


def iter_files(paths: list[Path]) -> Iterator[Path]:
    """The given files, and the supported files under the given directories (sorted, for stable runs)."""
    for path in paths:
        if path.is_dir():
            found = sorted(p for p in path.rglob("*") if p.is_file() and p.suffix.lower() in SUPPORTED_SUFFIXES)
            yield from found
        elif path.is_file():
            if path.suffix.lower() not in SUPPORTED_SUFFIXES:
                raise ConfigError(
                    f"{path}: unsupported file type {path.suffix or '(none)'!r}; "
                    f"supported: {', '.join(SUPPORTED_SUFFIXES)}"
                )
            yield path
        else:
            raise ConfigError(f"{path}: {_not_a_file(path)}")


def check_name(path: Path) -> None:
    """The path becomes the chunks' `source` metadata (UTF-8 jsonb): a name in another encoding is refused
    with its raw bytes shown, before anything is read."""
    try:
        str(path).encode("utf-8")
    except UnicodeEncodeError:
        raise ConfigError(
            f"{os.fsencode(path)!r}: the file name is not valid UTF-8; rename it (e.g. convmv -f latin1 -t utf8)"
        ) from None


def _not_a_file(path: Path) -> str:
    """Why `path` is neither a file nor a directory; a FIFO must never be opened (it would block)."""
    try:
        mode = path.stat().st_mode
    except FileNotFoundError:
        return "no such file or directory" + (" (broken symbolic link)" if path.is_symlink() else "")
    except OSError as exc:
        return f"cannot read: {exc.strerror}"
    kind = next((name for test, name in _SPECIAL_KINDS if test(mode)), "not a regular file")
    return f"is {kind}, not a regular file; only files and directories can be ingested"


def load_file(path: Path) -> list[Document]:
    """All documents of one file; ConfigError (with the file name, and line number for .jsonl) if unreadable."""
    check_name(path)
    suffix = path.suffix.lower()
    source = str(path.resolve())
    if suffix in (".txt", ".md"):
        return [Document(text=_read_text(path), source=source, name=path.name)]
    if suffix == ".pdf":
        return _load_pdf(path, source)
    if suffix == ".jsonl":
        return _load_jsonl(path, source)
    raise ConfigError(f"{path}: unsupported file type {suffix!r}; supported: {', '.join(SUPPORTED_SUFFIXES)}")


def _read_text(path: Path) -> str:
    try:
        return path.read_text(encoding="utf-8-sig")
    except UnicodeDecodeError as exc:
        raise ConfigError(f"{path}: not valid UTF-8 at byte {exc.start}; convert it (e.g. iconv -t UTF-8)") from exc
    except OSError as exc:
        raise ConfigError(f"{path}: cannot read: {exc.strerror}") from exc


def _refuse_unstorable(value: Any, where: str, field: str = "") -> None:
    """PostgreSQL stores neither a NUL character nor a lone surrogate in text or jsonb: say which field,
    now, rather than fail the whole write later."""
    if isinstance(value, str):
        found = _SURROGATE.search(value)
        if found:
            raise ConfigError(
                f"{where}: {field or 'value'} contains a lone surrogate \\u{ord(found.group()):04x} at character "
                f"{found.start()} (not valid Unicode; fix the producer of this file)"
            )
        if "\x00" in value:
            raise ConfigError(
                f"{where}: {field or 'value'} contains a NUL character (\\u0000) at character {value.index(chr(0))}, "
                "which the database cannot store; remove it"
            )
    elif isinstance(value, dict):
        for key, item in value.items():
            _refuse_unstorable(key, where, f"a key of {field or 'the record'}")
            _refuse_unstorable(item, where, f'"{key}"' if not field else f"{field}.{key}")
    elif isinstance(value, list):
        for i, item in enumerate(value):
            _refuse_unstorable(item, where, f"{field}[{i}]")


def _load_pdf(path: Path, source: str) -> list[Document]:
    from pypdf import PdfReader
    from pypdf.errors import PdfReadError

    try:
        reader = PdfReader(path)
        if reader.is_encrypted:
            raise ConfigError(f"{path}: the PDF is encrypted; export an unprotected copy first")
        pages = [page.extract_text() or "" for page in reader.pages]
    except ConfigError:
        raise
    except (PdfReadError, OSError, ValueError) as exc:
        raise ConfigError(f"{path}: cannot read PDF: {exc}") from exc
    # A damaged file trips pypdf anywhere (KeyError, TypeError, AssertionError...): still one line, never a
    # traceback, and the other files of the run are not affected.
    except Exception as exc:
        raise ConfigError(f"{path}: cannot read PDF (damaged file? {type(exc).__name__}: {exc})") from exc
    # One document per page, as Open WebUI's own PDF loader does, so each chunk can cite its page.
    # `page` is 0-based like Open WebUI's (its interface adds one when it displays it).
    docs = [
        Document(
            text=text,
            source=source,
            doc_id=f"page-{number}",
            name=path.name,
            metadata={"page": number, "page_label": str(number + 1), "total_pages": len(pages)},
        )
        for number, text in enumerate(pages)
        if text.strip()
    ]
    if not docs:
        raise ConfigError(f"{path}: no extractable text (a scanned PDF needs OCR first)")
    return docs


def _load_jsonl(path: Path, source: str) -> list[Document]:
    docs: list[Document] = []
    seen: set[str] = set()
    for number, line in enumerate(_read_text(path).splitlines(), start=1):
        if not line.strip():
            continue
        where = f"{path}:{number}"
        try:
            record = json.loads(line)
        except json.JSONDecodeError as exc:
            raise ConfigError(f"{where}: invalid JSON ({exc.msg} at column {exc.colno})") from exc
        if not isinstance(record, dict):
            raise ConfigError(f'{where}: expected an object {{"id", "text", "metadata"}}, got {type(record).__name__}')
        doc_id, text, metadata = record.get("id"), record.get("text"), record.get("metadata", {})
        if isinstance(doc_id, bool) or not isinstance(doc_id, str | int) or str(doc_id) == "":
            raise ConfigError(f'{where}: "id" must be a non-empty string or an integer')
        if not isinstance(text, str):
            raise ConfigError(f'{where}: "text" must be a string')
        if metadata is None:
            metadata = {}
        if not isinstance(metadata, dict):
            raise ConfigError(f'{where}: "metadata" must be an object')
        unknown = set(record) - {"id", "text", "metadata"}
        if unknown:
            raise ConfigError(f"{where}: unknown field(s) {', '.join(sorted(unknown))}; expected id, text, metadata")
        _refuse_unstorable(record, where)
        if str(doc_id) in seen:
            raise ConfigError(f"{where}: duplicate id {doc_id!r}")
        seen.add(str(doc_id))
        given_name = metadata.get("name")
        name = given_name if isinstance(given_name, str) and given_name else path.name
        docs.append(Document(text=text, source=source, doc_id=str(doc_id), name=name, metadata=dict(metadata)))
    return docs
