"""Hard constraints compiled into ONE parameterized SQL predicate that both arms apply.

A hard constraint removes rows before ranking in every arm; it never reorders. User input reaches SQL only
as bound parameters: keys included (`vmetadata ->> %s`), so a key like `x'); DROP TABLE --` is just a key
that no row has.

Equality (`eq`, `in`) means `vmetadata ->> key` equals the value as text, so `page=5` matches both
{"page": "5"} and {"page": 5}. In front of that test goes a containment test the GIN index of
migrations/0008 can answer: `vmetadata @> {key: "5"}`, plus `{key: 5}` when the value is a JSON number or
boolean. It finds every row the `->>` test accepts. A JSON number's or boolean's text is itself such a
literal, and only an array or object prints as text starting with `[` or `{`, so values that do are
left to the `->>` test alone. The result is the same rows, found through the index instead of a scan.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from typing import Any

from psycopg import sql

from ragfr.errors import ConfigError
from ragfr.filters.grammar import NUMBER, Condition

# Rows whose value is not a number (or not an ISO date) never satisfy a range instead of erroring.
_NUMERIC_SQL = r"^-?[0-9]+(\.[0-9]+)?$"
_DATE_SQL = r"^[0-9]{4}-[0-9]{2}-[0-9]{2}"
# How PostgreSQL prints a jsonb number (no exponent, no leading zero) or boolean: a value matching this may be
# stored as one, and is valid jsonb input.
_JSON_SCALAR = re.compile(r"-?(0|[1-9][0-9]*)(\.[0-9]+)?|true|false")


@dataclass(frozen=True)
class Filters:
    collections: tuple[str, ...] = ()
    conditions: tuple[Condition, ...] = ()
    embedding_model: str | None = None  # rows embedded by another model are never candidates

    def __post_init__(self) -> None:
        if not self.collections:
            raise ConfigError("at least one collection is required")
        for name in self.collections:
            if not name or "\x00" in name:
                raise ConfigError(f"invalid collection name {name!r}")

    def _scope(self, col: sql.Identifier) -> tuple[list[sql.Composable], list[Any]]:
        """The collections searched and, when pinned, the embedding model: part of every predicate."""
        parts: list[sql.Composable] = [sql.SQL("{}.collection_name = ANY(%s)").format(col)]
        params: list[Any] = [list(self.collections)]
        if self.embedding_model is not None:
            parts.append(sql.SQL("{}.embedding_model = %s").format(col))
            params.append(self.embedding_model)
        return parts, params

    def predicate(self, alias: str = "d") -> tuple[sql.Composed, list[Any]]:
        """`(WHERE-clause body, parameters)` with positional %s placeholders."""
        col = sql.Identifier(alias)
        parts, params = self._scope(col)
        for c in self.conditions:
            value = sql.SQL("({}.vmetadata ->> %s)").format(col)
            if c.op in ("eq", "in"):
                indexed, iparams = _containment(col, c)
                if c.op == "eq":
                    parts.append(sql.SQL("{}{} = %s").format(indexed, value))
                    params += [*iparams, c.key, c.values[0]]
                else:
                    parts.append(sql.SQL("{}{} = ANY(%s)").format(indexed, value))
                    params += [*iparams, c.key, list(c.values)]
            else:
                op = sql.SQL({"gt": ">", "gte": ">=", "lt": "<", "lte": "<="}[c.op])
                if NUMBER.match(c.values[0]):
                    parts.append(sql.SQL(
                        "(CASE WHEN {v} ~ %s THEN {v}::numeric END) {op} %s::numeric"
                    ).format(v=value, op=op))
                    params += [c.key, _NUMERIC_SQL, c.key, c.values[0]]
                else:
                    parts.append(sql.SQL(
                        "(CASE WHEN {v} ~ %s THEN {v} END) COLLATE \"C\" {op} %s"
                    ).format(v=value, op=op))
                    params += [c.key, _DATE_SQL, c.key, c.values[0]]
        return sql.SQL(" AND ").join(parts), params

    def estimable(self, alias: str = "d") -> tuple[sql.Composed, list[Any]] | None:
        """The part of the predicate the planner can estimate well, for a row-count ESTIMATE only (never to
        select rows): collections, model and the containment tests of equality conditions, whose
        selectivity comes from the GIN index's statistics. None when a condition has no such test (ranges,
        array/object values): the planner would guess a constant for it."""
        col = sql.Identifier(alias)
        parts, params = self._scope(col)
        for c in self.conditions:
            if c.op not in ("eq", "in"):
                return None
            tests, iparams = _containment_tests(col, c)
            if tests is None:
                return None
            parts.append(tests)
            params += iparams
        return sql.SQL(" AND ").join(parts), params


def _containment(col: sql.Identifier, c: Condition) -> tuple[sql.Composable, list[Any]]:
    """`(vmetadata @> ... OR ...) AND ` covering every value of an eq/in condition, or nothing when a value
    could be an array's or object's text (only the `->>` test can match those)."""
    tests, documents = _containment_tests(col, c)
    if tests is None:
        return sql.SQL(""), []
    return sql.SQL("{} AND ").format(tests), documents


def _containment_tests(col: sql.Identifier, c: Condition) -> tuple[sql.Composable | None, list[Any]]:
    """`(vmetadata @> ... OR ...)`, or None (see _containment)."""
    documents = containment_documents(c)
    if documents is None:
        return None, []
    tests = sql.SQL(" OR ").join([sql.SQL("{}.vmetadata @> %s::jsonb").format(col)] * len(documents))
    return sql.SQL("({})").format(tests), documents


def containment_predicate(c: Condition) -> sql.Composed | None:
    """The containment test of `c` with its documents written in and no table alias: the predicate of a
    declared filter's partial index (ragfr.vector_index.graphs). A query's own test, the same documents in
    the same order as parameters, is folded to these constants when PostgreSQL plans it, so the planner
    proves that the query's rows are all in the index and may walk it. None when `c` has no such test."""
    documents = containment_documents(c)
    if documents is None:
        return None
    tests = [sql.SQL("vmetadata @> {}::jsonb").format(sql.Literal(d)) for d in documents]
    return sql.SQL("({})").format(sql.SQL(" OR ").join(tests))


def containment_documents(c: Condition) -> list[str] | None:
    """The jsonb documents whose containment finds every row an eq/in condition accepts (module docstring),
    or None when a value could be an array's or object's text (only the `->>` test can match those)."""
    if any(v.lstrip().startswith(("[", "{")) for v in c.values):
        return None
    # Whole documents as parameters, not jsonb_build_object(): the planner then sees each value and prices
    # the GIN scans by it (with a function call it assumes a scan of the whole index per OR branch).
    key = json.dumps(c.key, ensure_ascii=False)
    documents: list[Any] = []
    for v in c.values:
        documents.append("{" + key + ": " + json.dumps(v, ensure_ascii=False) + "}")
        if _JSON_SCALAR.fullmatch(v):
            documents.append("{" + key + ": " + v + "}")  # the literal is valid JSON as it stands
    return documents
