"""The quality regression check of CI (`make eval-gate`): compare a run with the committed baselines
(eval/baselines.json). Not the evidence gate of answers (ragfr.gate.rank).

recall@10 and nDCG@10 are checked SEPARATELY, each against its own baseline and tolerance: a recall drop
fails the gate even when nDCG rose (and the reverse), because a better order of fewer found documents is
still a regression for retrieval-augmented answers. Baselines change only on purpose (`--update-baseline`,
a reviewed commit).
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ragfr.errors import ConfigError

GATED_METRICS = ("recall@10", "ndcg@10")
DEFAULT_TOLERANCE = 0.01


@dataclass(frozen=True)
class Check:
    configuration: str
    metric: str
    baseline: float
    measured: float | None  # None: the configuration did not run
    tolerance: float

    @property
    def passed(self) -> bool:
        return self.measured is not None and self.measured >= self.baseline - self.tolerance

    def line(self) -> str:
        if self.measured is None:
            return f"FAIL {self.configuration} {self.metric}: did not run (baseline {self.baseline:.4f})"
        verdict = "ok  " if self.passed else "FAIL"
        delta = self.measured - self.baseline
        return (f"{verdict} {self.configuration} {self.metric}: {self.measured:.4f} vs baseline {self.baseline:.4f} "
                f"({delta:+.4f}, tolerance {self.tolerance:.4f})")


def load_baselines(path: Path) -> dict[str, Any]:
    if not path.is_file():
        return {"tolerance": {m: DEFAULT_TOLERANCE for m in GATED_METRICS}, "suites": {}}
    try:
        data: dict[str, Any] = json.loads(path.read_text(encoding="utf-8"))
    except json.JSONDecodeError as exc:
        raise ConfigError(f"{path}: not valid JSON ({exc.msg})") from None
    if not isinstance(data.get("suites"), dict):
        raise ConfigError(f"{path}: expected an object with a `suites` object")
    return data


def check(results: dict[str, Any], baselines: dict[str, Any], suite: str, path: Path) -> list[Check]:
    """`results` is the run's JSON (`configurations` -> metrics)."""
    entry = baselines["suites"].get(suite)
    if entry is None:
        raise ConfigError(f"{path}: no baseline for suite {suite!r} (create one on purpose with --update-baseline)")
    if entry.get("embedder") != results["embedder"]:
        raise ConfigError(f"suite {suite!r} was baselined with embedder {entry.get('embedder')}, "
                          f"this run used {results['embedder']}")
    if entry.get("queries") != results["queries"]:
        raise ConfigError(f"suite {suite!r} was baselined on {entry.get('queries')} queries, this run has "
                          f"{results['queries']}: use the same dataset, --limit-queries and --seed")
    # A suite may widen the global tolerance: on 75 queries one query is worth 0.013 of recall.
    tolerance = {**{m: DEFAULT_TOLERANCE for m in GATED_METRICS}, **baselines.get("tolerance", {}),
                 **entry.get("tolerance", {})}
    checks = []
    for config, metrics in sorted(entry["configurations"].items()):
        measured = results["configurations"].get(config)
        for metric in GATED_METRICS:
            if metric in metrics:
                value = None if measured is None else float(measured[metric])
                checks.append(Check(config, metric, float(metrics[metric]), value, float(tolerance[metric])))
    return checks


def update(baselines: dict[str, Any], suite: str, results: dict[str, Any], configurations: list[str]) -> dict[str, Any]:
    """Record this run as the suite's baseline, for the named configurations that ran."""
    ran = [c for c in configurations if c in results["configurations"]]
    if not ran:
        raise ConfigError("none of the configurations to baseline ran in this evaluation")
    baselines.setdefault("tolerance", {m: DEFAULT_TOLERANCE for m in GATED_METRICS})
    previous = baselines["suites"].get(suite, {})
    baselines["suites"][suite] = {
        **({"tolerance": previous["tolerance"]} if "tolerance" in previous else {}),
        "dataset": results["dataset"],
        "embedder": results["embedder"],
        "queries": results["queries"],
        "configurations": {c: {m: results["configurations"][c][m] for m in GATED_METRICS} for c in ran},
    }
    return baselines
