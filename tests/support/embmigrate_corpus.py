"""A small French corpus of short, distinct chunks: e5 embeds ~10 short sentences/s on this machine, so
the migration tests stay fast while every vector is still computed by the real offline models."""

from __future__ import annotations

_SUBJECTS = ["La mairie de Lyon", "Le musée du Louvre", "L'université de Rennes", "La SNCF", "Le port de Marseille",
             "La bibliothèque nationale", "Le conseil régional", "L'hôpital de Nantes"]
_VERBS = ["a publié", "prépare", "a annulé", "finance", "présente"]
_OBJECTS = ["un rapport sur l'eau potable", "une exposition de peinture", "un plan de rénovation",
            "des horaires d'hiver", "un budget pour les écoles"]


def chunks(n: int) -> list[tuple[str, str]]:
    """`n` (id, text) pairs, ids sorting in insertion order."""
    # (i mod 8, i mod 5) is unique below 40; the object index extends that to 200 distinct sentences.
    if n > 200:
        raise ValueError("the corpus has 200 distinct chunks")
    return [
        (f"chunk-{i:04d}", f"{_SUBJECTS[i % 8]} {_VERBS[i % 5]} {_OBJECTS[(i // 40) % 5]} en {2000 + i % 23}.")
        for i in range(n)
    ]
