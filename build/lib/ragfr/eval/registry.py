"""The configurations `ragfr eval --config` accepts, built from the specs themselves.

ragfr's own configurations are always there. Comparison baselines that need more than the product (stock
Open WebUI's venv, rank_bm25) live in the repository's tools and join through the `ragfr.eval_configs`
entry-point group: each entry point names a list of `ConfigSpec`. An installation without the tools simply
offers fewer names.
"""

from __future__ import annotations

from collections.abc import Iterable
from importlib.metadata import entry_points

from ragfr.errors import ConfigError
from ragfr.eval import ragfr_configs
from ragfr.eval.configs import ConfigSpec

ENTRY_POINT_GROUP = "ragfr.eval_configs"


def _plugged_in() -> Iterable[ConfigSpec]:
    for ep in sorted(entry_points(group=ENTRY_POINT_GROUP), key=lambda e: e.name):
        specs = ep.load()
        for spec in specs:
            if not isinstance(spec, ConfigSpec):
                raise ConfigError(f"entry point {ep.value} ({ENTRY_POINT_GROUP}) yields {spec!r}, not a ConfigSpec")
            yield spec


def registry() -> dict[str, ConfigSpec]:
    """Name -> spec, ragfr's configurations first; a name given twice is an error, never a silent override."""
    specs: dict[str, ConfigSpec] = {}
    for spec in [*ragfr_configs.SPECS, *_plugged_in()]:
        if spec.name in specs:
            raise ConfigError(f"evaluation configuration {spec.name!r} is declared twice")
        specs[spec.name] = spec
    return specs


def config_names() -> list[str]:
    return list(registry())
