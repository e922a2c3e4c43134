"""The subject rule of the gate (issue 47 items 2 and 4): a question whose subject no searched document names.

ragfr.analysis.subject finds the absence (pure text); the search reads the document frequencies it needs
(ragfr.retrieval.hybrid, with the features' read of ragfr_term_stats) and carries the Absence on its result;
ragfr.gate.rank.decide combines it with the verdict. Here: how an Absence travels where no Python object can
(the JSON of `ragfr search --json`, `ragfr gate check` and the passages' metadata in Open WebUI) and which of
several searches' absences the chat reads.

Why only a STRONG absence changes a verdict: a head noun of the subject held by no passage of the searched
collections means nothing there is about it; a missing modifier (« panneaux photovoltaïques » where
« panneaux » is found) or a phrase missing from the top passages only also flags a third of the answerable
questions (typos, paraphrases: docs/retrieval-quality.md, "The gate on corpora it never saw"), so those only
explain a caution or refusal the gate reached by itself.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

from ragfr.analysis.subject import Absence, Subject


def to_json(absence: Absence | None) -> dict[str, Any] | None:
    if absence is None:
        return None
    s = absence.subject
    return {"subject": s.surface, "where": absence.where, "strong": absence.strong,
            "missing": list(absence.missing), "lexemes": list(s.lexemes), "units": [list(u) for u in s.units],
            "reason_fr": absence.reason_fr()}


def from_json(data: Mapping[str, Any] | None) -> Absence | None:
    """The Absence `to_json` wrote; None for null. Raises KeyError / TypeError / ValueError on anything else."""
    if data is None:
        return None
    where = str(data["where"])
    if where not in ("collection", "top"):
        raise ValueError(f"unknown absence kind {where!r}")
    subject = Subject(str(data["subject"]), tuple(map(str, data["lexemes"])),
                      tuple(tuple(map(str, u)) for u in data.get("units") or ()))
    return Absence(subject, "collection" if where == "collection" else "top", tuple(map(str, data["missing"])),
                   strong=bool(data["strong"]))


def severity(absence: Absence | None) -> int:
    """0 none, 1 missing from the top passages, 2 a modifier no passage holds, 3 a head noun no passage holds."""
    if absence is None:
        return 0
    if absence.where == "top":
        return 1
    return 3 if absence.strong else 2


def least(absences: Iterable[Absence | None]) -> Absence | None:
    """The most favourable reading of several searches of one question (Open WebUI may run several queries):
    the least severe absence, None when any search found its subject."""
    found = list(absences)
    if not found:
        return None
    return min(found, key=severity)
