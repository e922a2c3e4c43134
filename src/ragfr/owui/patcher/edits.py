"""Anchored edits on Python source: locate a function by qualified name, check its anchor, rewrite.

Scopes are found with `ast` on the pristine text, so an edit lands in the named function or nowhere;
the anchor text is then checked exactly, so an upstream change to the signature or the anchored line
refuses the patch instead of editing something else.
"""

from __future__ import annotations

import ast
import textwrap
import tokenize
from dataclasses import dataclass

from ragfr.owui.patcher.manifest import Edit


@dataclass(frozen=True)
class AnchorProblem:
    """Why an edit's anchor did not match (used to build one clear error line)."""

    edit: Edit
    reason: str


@dataclass(frozen=True)
class _Span:
    start: int
    end: int
    text: str
    edit_id: str


FunctionNode = ast.FunctionDef | ast.AsyncFunctionDef


def find_scope(tree: ast.Module, qualname: str) -> FunctionNode | None:
    """The function or method named `Class.method` / `function` at module level (no nesting beyond)."""
    body: list[ast.stmt] = tree.body
    parts = qualname.split(".")
    for i, part in enumerate(parts):
        last = i == len(parts) - 1
        found: ast.stmt | None = None
        for node in body:
            wanted = (ast.FunctionDef, ast.AsyncFunctionDef) if last else (ast.ClassDef,)
            if isinstance(node, wanted) and node.name == part:
                found = node
        if found is None:
            return None
        if last:
            assert isinstance(found, ast.FunctionDef | ast.AsyncFunctionDef)
            return found
        assert isinstance(found, ast.ClassDef)
        body = found.body
    return None


def _line_offsets(text: str) -> list[int]:
    offsets = [0]
    for line in text.splitlines(keepends=True):
        offsets.append(offsets[-1] + len(line))
    return offsets


def _indent_of(line: str) -> str:
    return line[: len(line) - len(line.lstrip())]


def signature_end(lines: list[str], node: FunctionNode) -> int:
    """Index (0-based) of the line after the `def ...:` header, found by tokens (comments may follow it)."""
    source = iter(lines[node.lineno - 1 :])
    depth = 0
    for tok in tokenize.generate_tokens(lambda: next(source, "")):
        if tok.type == tokenize.OP and tok.string in "([{":
            depth += 1
        elif tok.type == tokenize.OP and tok.string in ")]}":
            depth -= 1
        elif tok.type == tokenize.OP and tok.string == ":" and depth == 0:
            return node.lineno - 1 + tok.end[0]
    raise ValueError(f"no end of signature for {node.name}")


def signature_text(lines: list[str], node: FunctionNode) -> str:
    """The `def ...:` lines of a function, dedented, as the manifest's anchor spells them."""
    end = signature_end(lines, node)
    if end > node.body[0].lineno - 1:
        return ""  # body on the def line: nothing separate to replace
    return textwrap.dedent("".join(lines[node.lineno - 1 : end])).rstrip()


def _span_for(text: str, lines: list[str], offsets: list[int], tree: ast.Module, edit: Edit) -> _Span | AnchorProblem:
    node = find_scope(tree, edit.scope)
    if node is None:
        return AnchorProblem(edit, f"function {edit.scope} not found")
    if edit.kind == "replace_body":
        found = signature_text(lines, node)
        if found != edit.anchor.rstrip():
            return AnchorProblem(edit, f"signature of {edit.scope} differs")
        first = signature_end(lines, node)
        last = node.end_lineno or node.lineno
        indent = _indent_of(lines[first])
        body = textwrap.indent(edit.replacement.rstrip() + "\n", indent)
        # Keep blank lines of the replacement empty (no trailing whitespace).
        body = "\n".join(line if line.strip() else "" for line in body.split("\n"))
        return _Span(offsets[first], offsets[last], body, edit.id)
    scope_start, scope_end = offsets[node.lineno - 1], offsets[node.end_lineno or node.lineno]
    scope = text[scope_start:scope_end]
    count = scope.count(edit.anchor)
    if count != 1:
        return AnchorProblem(edit, f"anchor found {count} times in {edit.scope}, expected once")
    start = scope_start + scope.index(edit.anchor)
    line_start = text.rfind("\n", 0, start) + 1
    indent = _indent_of(text[line_start:start])
    head, *rest = edit.replacement.split("\n")
    replacement = head + "".join("\n" + (indent + part if part else "") for part in rest)
    return _Span(start, start + len(edit.anchor), replacement, edit.id)


def find_problems(text: str, edits: tuple[Edit, ...]) -> list[AnchorProblem]:
    """Every edit whose anchor does not match `text` (empty when all would apply)."""
    try:
        tree = ast.parse(text)
    except SyntaxError as exc:
        return [AnchorProblem(e, f"file does not parse: {exc.msg} (line {exc.lineno})") for e in edits]
    lines = text.splitlines(keepends=True)
    offsets = _line_offsets(text)
    spans = [_span_for(text, lines, offsets, tree, e) for e in edits]
    return [s for s in spans if isinstance(s, AnchorProblem)]


def apply_edits(text: str, edits: tuple[Edit, ...]) -> str | list[AnchorProblem]:
    """The edited text, or the list of anchors that did not match (then nothing is changed)."""
    problems = find_problems(text, edits)
    if problems:
        return problems
    tree = ast.parse(text)
    lines = text.splitlines(keepends=True)
    offsets = _line_offsets(text)
    spans = sorted(
        (s for s in (_span_for(text, lines, offsets, tree, e) for e in edits) if isinstance(s, _Span)),
        key=lambda s: s.start,
    )
    for before, after in zip(spans, spans[1:], strict=False):
        if before.end > after.start:
            raise ValueError(f"edits {before.edit_id} and {after.edit_id} overlap")
    for span in reversed(spans):
        text = text[: span.start] + span.text + text[span.end :]
    return text
