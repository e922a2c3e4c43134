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
from datetime import date, datetime
from typing import Any, Literal, get_args

from psycopg import sql

from ragfr.errors import ConfigError

_KEY = re.compile(r"^[^\x00]{1,128}$")
_NUMBER = re.compile(r"^-?\d+(\.\d+)?$")
_DATE = re.compile(r"^\d{4}-\d{2}-\d{2}([T ][0-9:.+\-Z]*)?$")
# Rows whose value is not a number (or not an ISO date) never satisfy a range instead of erroring.
_NUMERIC_SQL = r"^-?[0-9]+(\.[0-9]+)?$"
_DATE_SQL = r"^[0-9]{4}-[0-9]{2}-[0-9]{2}"
# How PostgreSQL prints a jsonb number (no exponent, no leading zero) or boolean: a value matching this may be
# stored as one, and is valid jsonb input.
_JSON_SCALAR = re.compile(r"-?(0|[1-9][0-9]*)(\.[0-9]+)?|true|false")


# Equality and set membership compare text; the four comparisons are numeric, or dates as ISO text.
FilterOp = Literal["eq", "in", "gt", "gte", "lt", "lte"]
FILTER_OPS: tuple[FilterOp, ...] = get_args(FilterOp)


@dataclass(frozen=True)
class Condition:
    key: str
    op: FilterOp
    values: tuple[str, ...]

    def __post_init__(self) -> None:
        if not self.values:
            raise ConfigError(f"filter on {self.key!r} has no value")
        if self.op not in FILTER_OPS:
            raise ConfigError(f"unknown filter operator {self.op!r} on {self.key!r}; one of {', '.join(FILTER_OPS)}")
        if not _KEY.match(self.key):
            raise ConfigError(f"invalid metadata key {self.key!r}: 1-128 characters, no NUL byte")
        if any("\x00" in v for v in self.values):
            raise ConfigError(f"filter value for {self.key!r} contains a NUL byte")
        if self.op in ("gt", "gte", "lt", "lte"):
            (value,) = self.values
            if not (_NUMBER.match(value) or _DATE.match(value)):
                raise ConfigError(f"range filter on {self.key!r} needs a number or an ISO date, got {value!r}")
            if not _NUMBER.match(value):
                _check_date(self.key, value)


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
                if _NUMBER.match(c.values[0]):
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
    declared filter's partial index (ragfr.db.filter_indexes). A query's own test, the same documents in
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


_COMPARISONS: dict[str, FilterOp] = {">=": "gte", "<=": "lte", ">": "gt", "<": "lt"}
_MAPPING_OPS: dict[str, FilterOp] = {"$eq": "eq", "$in": "in", "$gt": "gt", "$gte": "gte", "$lt": "lt", "$lte": "lte"}


def check_key(key: str, where: str) -> None:
    """The one rule for metadata keys, shared by `--filter` and `ingest --meta`: a key one can store can
    also be filtered on."""
    if not _KEY.match(key):
        raise ConfigError(f"{where}: invalid metadata key {key!r}: 1-128 characters, no NUL byte")


def _check_date(key: str, value: str) -> None:
    """`2023-13-45` has the shape of a date but names none: refused instead of comparing as text."""
    try:
        if len(value) == 10:
            date.fromisoformat(value)
        else:
            datetime.fromisoformat(value)
    except ValueError as exc:
        raise ConfigError(f"range filter on {key!r}: {value!r} is not a valid ISO date ({exc})") from exc


GRAMMAR = """\
filter grammar (--filter EXPR, repeatable; every filter must hold):
  KEY=VALUE            equality with the stored value as text (page=5 matches 5 and "5")
  KEY=A|B|C            any of the values
  KEY>=X  KEY<=X       range, X a number (annee>=2023) or an ISO date (date<=2024-12-31)
  KEY>X   KEY<X        strict range, same values
  The key ends at the first of = < > !. The operator is exactly one of = >= <= > <; anything else
  (">=5" without a key, "a==b", "a=>5", "a<>5", "a!=b") is an error, never a silent other filter.
  A value is taken as written (spaces around it trimmed) and may contain < > ! =, e.g. titre=a<b.
  Quote with double quotes (JSON string rules: \\" and \\\\ inside) a value that contains | or starts
  with an operator character, or a key that contains one: titre="a|b", note="=5", "prix<ht"<=100.
  Dates must be real dates: 2023-13-45 is refused."""

_OPERATORS = re.compile(r">=|<=|!=|=|>|<")
_OPERATOR_CHARS = "=<>!"


def parse_condition(text: str) -> Condition:
    """One `--filter` expression, following GRAMMAR; every malformed expression is a ConfigError."""
    rest = text.strip()
    if rest.startswith('"'):
        key, rest = _quoted(rest, text, "key")
    else:
        end = next((i for i, ch in enumerate(rest) if ch in _OPERATOR_CHARS), len(rest))
        key, rest = rest[:end].strip(), rest[end:]
    if not rest.strip():
        raise ConfigError(f"cannot parse filter {text!r}: no operator; use key=value, key=a|b, key>=N, "
                          "key<=N, key>N or key<N (see `ragfr search --help`)")
    rest = rest.lstrip()
    match = _OPERATORS.match(rest)
    if not key:
        shown = match.group() if match else "="
        raise ConfigError(f"filter {text!r} has no key before its operator: write it as key{shown}VALUE")
    if match is None:
        raise ConfigError(f"filter {text!r}: {rest[:2]!r} is not an operator; use =, >=, <=, > or <")
    op, value = match.group(), rest[match.end():]
    if value.strip()[:1] in tuple(_OPERATOR_CHARS):
        raise ConfigError(
            f"filter {text!r}: {op + value.strip()[0]!r} is not an operator; use =, >=, <=, > or <, "
            f'or quote a value that starts with {value.strip()[0]!r}: {key}{op}"{value.strip()}"'
        )
    if op == "!=":
        raise ConfigError(f"{text!r}: negative filters are not supported (a hard filter selects rows)")
    values = _values(value, text)
    if op == "=":
        return Condition(key, "in" if len(values) > 1 else "eq", values)
    if len(values) != 1:
        raise ConfigError(f"filter {text!r}: a range takes one value, not a list")
    return Condition(key, _COMPARISONS[op], values)


def _quoted(rest: str, text: str, what: str) -> tuple[str, str]:
    try:
        value, end = json.JSONDecoder().raw_decode(rest)
    except json.JSONDecodeError as exc:
        raise ConfigError(f"filter {text!r}: unterminated or invalid quoted {what} ({exc.msg})") from exc
    return str(value), rest[end:]


def _values(value: str, text: str) -> tuple[str, ...]:
    """`a|b|"c|d"`: items separated by |, each raw (trimmed) or double-quoted (taken exactly)."""
    values: list[str] = []
    rest = value
    while True:
        rest = rest.lstrip()
        if rest.startswith('"'):
            item, rest = _quoted(rest, text, "value")
            rest = rest.lstrip()
            if rest and not rest.startswith("|"):
                raise ConfigError(f"filter {text!r}: unexpected {rest!r} after a quoted value")
        else:
            item, bar, after = rest.partition("|")
            item = item.strip()
            if not item:
                raise ConfigError(f"{text!r}: empty value (use key=value or key=a|b)")
            rest = bar + after
        values.append(item)
        if not rest:
            return tuple(values)
        rest = rest[1:]  # the |


def from_mapping(mapping: dict[str, Any] | None) -> tuple[Condition, ...]:
    """Open WebUI style `{"key": value}` / `{"key": {"$in": [...]}}` / `{"key": {"$gte": x}}` filters."""
    out: list[Condition] = []
    for key, spec in (mapping or {}).items():
        if isinstance(spec, dict):
            for op, value in spec.items():
                name = _MAPPING_OPS.get(op)
                if name is None:
                    raise ConfigError(f"unsupported filter operator {op!r} on {key!r}")
                values = _members(key, value) if name == "in" else (_scalar(value),)
                out.append(Condition(str(key), name, values))
        elif isinstance(spec, list | tuple):
            out.append(Condition(str(key), "in", _members(key, spec)))
        else:
            out.append(Condition(str(key), "eq", (_scalar(spec),)))
    return tuple(out)


def _members(key: Any, value: Any) -> tuple[str, ...]:
    # A string is iterable too: without this check "$in": "abc" would mean a, b or c.
    if not isinstance(value, list | tuple):
        raise ConfigError(f"filter on {key!r}: $in takes a list of values, got {type(value).__name__} {value!r}")
    if not value:
        raise ConfigError(f"filter on {key!r}: $in with an empty list matches nothing; drop the filter or give values")
    return tuple(_scalar(v) for v in value)


def _scalar(value: Any) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"  # what ->> yields for JSON booleans
    return str(value)
