"""Open WebUI-style filter mappings (`from_mapping`): every malformed `$in` is one clear ConfigError before any
SQL is built. Before this, a string was split into its characters and an empty list reached PostgreSQL as a
syntax error."""

from __future__ import annotations

import pytest

from ragfr.errors import ConfigError
from ragfr.filters.grammar import Condition, from_mapping


def test_in_takes_a_list_of_members() -> None:
    assert from_mapping({"lang": {"$in": ["fr", True, 3]}}) == (Condition("lang", "in", ("fr", "true", "3")),)
    assert from_mapping({"lang": ["fr", "de"]}) == (Condition("lang", "in", ("fr", "de")),)


@pytest.mark.parametrize("value", ["abc", 7, {"a": 1}])
def test_in_given_a_non_list_is_refused(value: object) -> None:
    with pytest.raises(ConfigError, match=r"filter on 'lang': \$in takes a list of values"):
        from_mapping({"lang": {"$in": value}})


@pytest.mark.parametrize("mapping", [{"lang": {"$in": []}}, {"lang": []}])
def test_empty_in_is_refused(mapping: dict[str, object]) -> None:
    with pytest.raises(ConfigError, match=r"\$in with an empty list matches nothing"):
        from_mapping(mapping)


def test_a_condition_without_value_is_refused() -> None:
    with pytest.raises(ConfigError, match="has no value"):
        Condition("lang", "in", ())


def test_unknown_operator_is_refused() -> None:
    with pytest.raises(ConfigError, match="unsupported filter operator '\\$regex'"):
        from_mapping({"lang": {"$regex": "f.*"}})
    with pytest.raises(ConfigError, match="unknown filter operator 'like'"):
        Condition("lang", "like", ("x",))  # type: ignore[arg-type]
