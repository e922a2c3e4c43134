"""The filter grammar: a hard constraint (Condition) from `--filter key=value` (parse_condition, GRAMMAR) or
from Open WebUI's `{"key": {"$in": [...]}}` (from_mapping), validated before any SQL is written; its SQL is
ragfr.filters.predicate's. The one rule for metadata keys (check_key) is here too, shared with `ragfr ingest
--meta`: a key one can store can also be filtered on.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from datetime import date, datetime
from typing import Any, Literal, get_args

from ragfr.errors import ConfigError

_KEY = re.compile(r"^[^\x00]{1,128}$")
NUMBER = re.compile(r"^-?\d+(\.\d+)?$")
_DATE = re.compile(r"^\d{4}-\d{2}-\d{2}([T ][0-9:.+\-Z]*)?$")

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
            if not (NUMBER.match(value) or _DATE.match(value)):
                raise ConfigError(f"range filter on {self.key!r} needs a number or an ISO date, got {value!r}")
            if not NUMBER.match(value):
                _check_date(self.key, value)


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
