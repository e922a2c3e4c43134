"""What an embedding migration does, wherever it runs: in this process (`ragfr embeddings migrate`) or in
a Job that `ragfr embeddings k8s` creates, which runs the same command from `cli_args()`."""

from __future__ import annotations

import argparse
from dataclasses import dataclass, fields, replace
from typing import Any, Self


@dataclass(frozen=True, kw_only=True)
class MigrationSettings:
    to: str
    dims: int | None = None
    batch: int = 64
    no_switch: bool = False
    min_recall: float = 0.9
    recall_sample: int = 100
    ef_search: int = 40
    maintenance_work_mem: str = "256MB"
    lock_timeout: float = 2.0  # seconds one DDL lock attempt may wait (and queue Open WebUI's queries)
    lock_wait: float = 60.0  # seconds all attempts of one DDL step may take together

    @classmethod
    def from_args(cls, args: argparse.Namespace, **extra: Any) -> Self:
        """The settings parsed by the CLI (its options carry the same names), plus the subclass's own."""
        return cls(**{f.name: getattr(args, f.name) for f in fields(MigrationSettings)}, **extra)

    def given_args(self, **change: Any) -> list[str]:
        """The options that differ from the defaults (after `change`), as the operator would type them: what a
        resume hint repeats, so the resumed run has the settings of the interrupted one."""
        settings = replace(self, **change)
        defaults = MigrationSettings(to=self.to)
        out = ["--to", self.to]
        for f in fields(MigrationSettings):
            value = getattr(settings, f.name)
            if f.name == "to" or value == getattr(defaults, f.name):
                continue
            flag = "--" + f.name.replace("_", "-")
            out += [flag] if value is True else [flag, f"{value:g}" if isinstance(value, float) else str(value)]
        return out

    def cli_args(self) -> list[str]:
        """`ragfr embeddings migrate` options that reproduce these settings."""
        args = ["--to", self.to, "--batch", str(self.batch), "--min-recall", str(self.min_recall),
                "--recall-sample", str(self.recall_sample), "--ef-search", str(self.ef_search),
                "--maintenance-work-mem", self.maintenance_work_mem,
                "--lock-timeout", f"{self.lock_timeout:g}", "--lock-wait", f"{self.lock_wait:g}"]
        if self.dims is not None:
            args += ["--dims", str(self.dims)]
        if self.no_switch:
            args.append("--no-switch")
        return args
