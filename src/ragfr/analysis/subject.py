"""The subject of a French question, and whether the searched documents mention it (issue 47 items 2 and 4).

Why: the evidence gate reads scores, and a question about something no document mentions still finds a
passage that is close in the embedding space and shares the question's generic words (« Comment payer le
permis de conduire ? » answered from the jet-ski licence). What such a question names is not in the
documents: that is checkable, model-free, and tellable to the analyst in their own words.

Contract:
  subject_terms(question) -> list[Subject]
      The noun phrases that name what the question is about, in order: runs of meaningful words that a
      determiner, a preposition or a capital letter introduces (« le permis de conduire », « une borne de
      recharge », « Lloyd's »), joined across « de / à / en (+ article) ». Each keeps its surface form as
      typed (what the analyst is shown) and its lexemes as the database indexes them
      (ragfr.analysis.french, so they can be looked up in ragfr_term_stats). A question with no such
      introducer (« delai declaration sinistre ») has its whole run of meaningful words as subjects. No
      part-of-speech model: verbs that follow a noun are cut by a small list and by the inverted form
      (« prévoit-il »); what remains is measured, not assumed (ragfr_tools.eval.gate_corpora).
  subject_lexemes(subjects) -> list[str]
      Every lexeme to look up (ragfr.retrieval.evidence.term_stats reads their document frequencies).
  absent_subject(subjects, df, top_texts) -> Absence | None
      The first subject that no passage of the collections holds (one of its lexemes has document
      frequency 0: "collection"), else the first subject none of the top passages holds whole ("top":
      every lexeme of the phrase in one passage, close together), else None.
  Absence.reason_fr()
      The French sentence to show: « Aucun des documents joints ne mentionne « borne de recharge ». » or,
      for "top", « Les passages retrouvés ne mentionnent pas « ... ». ».
Pure text logic: no database, no model (the caller passes the document frequencies and passage texts).
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Literal

from ragfr.analysis.folding import fold
from ragfr.analysis.french import analyze, lexeme, stop_words

# Words after which a noun phrase starts (folded, lower case). Articles, possessives, demonstratives,
# interrogative determiners and the prepositions that introduce a complement.
_INTRODUCERS = frozenset("""
le la les l un une des du de d au aux a mon ma mes ton ta tes son sa ses notre nos votre vos leur leurs
ce cet cette ces quel quelle quels quelles chaque plusieurs aucun aucune tout toute tous toutes certains
certaines en par pour sur dans avec sans chez contre entre apres avant pendant lors selon sous vers hors
depuis envers parmi
""".split())
# Inside a phrase: « pompe à chaleur », « accidents de la vie », « local à vélos de l'immeuble ».
_JOINERS = frozenset({"de", "d", "du", "des", "à", "au", "aux", "en"})  # NOT "a": « Qui a dirigé… »
_JOINER_ARTICLES = frozenset({"le", "la", "l", "les", "un", "une", "mon", "ma", "mes", "son", "sa", "ses",
                              "notre", "nos", "votre", "vos", "leur", "leurs", "ce", "cet", "cette", "ces"})
# Words that end a phrase and are never a subject: question words, pronouns and the frequent verbs of a
# question that the stop list does not hold (folded). Short and general on purpose: a domain's own
# vocabulary (« garantie », « contrat ») is left to the document frequencies.
_NOT_SUBJECT = frozenset("""
combien comment quoi ou lequel laquelle lesquels lesquelles ceux celui celle celles
existe existent prevoit prevoient couvre couvrent prend prennent paie paye payer verse
peuvent pouvez doivent devez fonctionne fonctionnent applique appliquent signifie veut sert servent
cas
""".split())
# What kind of answer is wanted, not what the question is about (« En quelle année… », « le montant de la
# franchise »): never a subject of their own, never the reason for a refusal.
ANSWER_TYPES = frozenset("""
annee annees date dates jour jours mois siecle siecles epoque periode moment heure age duree delai delais
ville villes pays lieu lieux endroit region nom noms prenom titre surnom type types sorte genre forme
nature fonction role metier profession langue langues origine origines raison raisons cause causes but
nombre quantite montant montants prix cout taux pourcentage part taille hauteur longueur poids couleur
materiau matiere difference particularite caracteristique caracteristiques principe objectif definition
sens signification exemple exemples moyen moyens maniere facon methode etape etapes consequence
consequences effet effets idee idees premier premiere dernier derniere
nationalite nationalites specialite specialites discipline statut rang grade theme themes sujet sujets
objet objets contenu composition evolution importance avantage avantages inconvenient inconvenients
resultat resultats score
""".split())
_OBJECT_ARTICLES = frozenset({"le", "la", "l", "les", "un", "une", "mon", "ma", "mes", "son", "sa", "ses",
                              "leur", "leurs", "ce", "cet", "cette", "ces"})
# A word that ends an idiom rather than naming anything: « pris en charge », « à partir de ».
_IDIOM_TAILS = frozenset({("en", "charge"), ("a", "partir"), ("au", "bout"), ("a", "bout")})
# After an auxiliary (or an unaccented « a », typed for « à » as often as it is the verb), a lower-case past
# participle or infinitive is a verb: « Qui a conquis… », « qui a démissionné », « a été condamné »,
# « delai a respecter ».
_AUXILIARIES = frozenset("a ai as avons avez ont avait avaient eu ete est sont etait etaient fut furent sera "
                         "seront aura auront".split())
_VERB_ENDINGS = ("é", "ée", "és", "ées", "i", "ie", "is", "ise", "it", "u", "ue", "us", "ert", "erte", "int",
                 "er", "ir")
# « pour agir », « sans payer »: an infinitive right after these is not a noun phrase (« -ier » and « -yer »
# are left out: « pour dossier », « sans loyer » name things).
_BEFORE_INFINITIVE = frozenset({"pour", "sans"})
# Everyday words and the words contracts use for the same thing: a question about « ma voiture » is about the
# « véhicule » of the auto contract. Read only by the collection-wide check (a head noun no passage holds);
# short on purpose: a thesaurus would also hide subjects that really are absent (the near-domain sets of
# docs/retrieval-quality.md, "The gate on corpora it never saw").
_EQUIVALENT_WORDS = (("voiture", "vehicule", "automobile", "auto"),
                     ("maison", "habitation", "logement", "domicile"))
# A pronoun after a hyphen marks the word before it as an inverted verb: « prévoit-il », « fera-t-on ».
_INVERTED = re.compile(r"-(?:t-)?(?:il|elle|ils|elles|on|je|tu|nous|vous)\b", re.IGNORECASE)
_WORD = re.compile(r"[^\W_]+")
WINDOW_SLACK = 3  # lexemes allowed between a phrase's words in a passage (« panneaux solaires photovoltaïques »)
TOP = 3  # what the chat model receives (ragfr.retrieval.evidence.TOP)

Where = Literal["collection", "top"]


@dataclass(frozen=True)
class Subject:
    surface: str  # as typed in the question, e.g. « borne de recharge »
    lexemes: tuple[str, ...]  # its meaningful words as the database indexes them, in order
    # the phrase cut at its joiners (« borne » / « recharge »): each unit's first lexeme is its head noun
    units: tuple[tuple[str, ...], ...] = ()

    def heads(self) -> tuple[str, ...]:
        return tuple(u[0] for u in self.units if u) if self.units else self.lexemes[:1]


@dataclass(frozen=True)
class Absence:
    subject: Subject
    where: Where  # "collection": no passage holds one of its words; "top": none of the top passages holds it
    missing: tuple[str, ...]  # the lexemes missing (collection: df 0; top: not in the best-covering passage)
    # a head noun of the phrase that no passage of the collection holds: nothing there is about it (the gate
    # may refuse); otherwise a modifier or the phrase as a whole is missing (the gate may caution)
    strong: bool = False

    def reason_fr(self) -> str:
        if self.where == "collection":
            return f"Aucun des documents joints ne mentionne « {self.subject.surface} »."
        return f"Les passages retrouvés ne mentionnent pas « {self.subject.surface} »."


@dataclass(frozen=True)
class _Token:
    surface: str
    start: int
    end: int
    folded: str
    lexeme: str | None
    kind: Literal["intro", "joiner", "content", "stop"]
    verb: bool  # followed by an inverted pronoun


def _verb_after(prev: _Token, surface: str) -> bool:
    """`surface` is a participle or an infinitive by its place: after an auxiliary, or an infinitive after
    « pour » / « sans » (lower case only: a capital is a name)."""
    word = surface.lower()
    if word != surface or len(word) < 4:
        return False
    if prev.surface.lower() == "a" or (prev.folded in _AUXILIARIES and prev.folded != "a"):
        return word.endswith(_VERB_ENDINGS)
    return prev.folded in _BEFORE_INFINITIVE and word.endswith(("er", "ir")) and not word.endswith(("ier", "yer"))


def _tokens(question: str) -> list[_Token]:
    stops = stop_words()
    out: list[_Token] = []
    for m in _WORD.finditer(question):
        surface = m.group(0)
        folded = fold(surface).lower()
        joiner = surface.lower() if surface.lower() == "à" else folded
        verb = bool(_INVERTED.match(question, m.end())) or (bool(out) and _verb_after(out[-1], surface))
        if out and (out[-1].folded, folded) in _IDIOM_TAILS:
            kind: Literal["intro", "joiner", "content", "stop"] = "stop"
        elif joiner in _JOINERS or folded in _JOINER_ARTICLES or folded in _INTRODUCERS:
            kind = "joiner" if joiner in _JOINERS else "intro"
        elif any(ch.isdigit() for ch in folded):  # a number or an ordinal introduces, like an article
            kind = "intro"
        elif folded in stops or folded in _NOT_SUBJECT or folded in ANSWER_TYPES or verb or len(folded) < 2:
            kind = "stop"
        else:
            kind = "content"
        out.append(_Token(surface, m.start(), m.end(), folded, lexeme(folded), kind, verb))
    # A word an article follows is a verb taking its object (« rendre les juifs », « dirigé la communauté »);
    # « des » and « du » are left alone: they also join nouns (« bris des vitres »).
    for i in range(len(out) - 1):
        if out[i].kind == "content" and out[i + 1].folded in _OBJECT_ARTICLES:
            out[i] = _Token(out[i].surface, out[i].start, out[i].end, out[i].folded, out[i].lexeme, "stop", True)
    return out


def _phrases(toks: list[_Token], question: str, anchored: bool) -> list[Subject]:
    """Runs of content words (joined by joiner + optional article), starting after an introducer (or at a
    capitalised word that does not open the sentence) when `anchored`, anywhere otherwise."""
    out: list[Subject] = []
    i, n = 0, len(toks)
    while i < n:
        t = toks[i]
        prev = toks[i - 1] if i else None
        starts = t.kind == "content" and (
            not anchored or (prev is not None and prev.kind in ("intro", "joiner"))
            or (i > 0 and t.surface[:1].isupper()) or (t.surface.isupper() and len(t.surface) > 1))
        if not starts:
            i += 1
            continue
        words = [t]
        units: list[list[_Token]] = [[t]]
        j = i + 1
        while j < n:
            if toks[j].kind == "content":
                words.append(toks[j])
                units[-1].append(toks[j])
                j += 1
                continue
            k = j
            if toks[k].kind == "joiner":  # de / à / en, then maybe an article, then a content word
                k += 1
                while k < n and toks[k].kind == "intro" and toks[k].folded in _JOINER_ARTICLES:
                    k += 1
                if k < n and toks[k].kind == "content" and k - j <= 2:
                    words.append(toks[k])
                    units.append([toks[k]])
                    j = k + 1
                    continue
            break
        lexemes = tuple(dict.fromkeys(w.lexeme for w in words if w.lexeme))
        if lexemes:
            unit_lexemes = tuple(tuple(w.lexeme for w in u if w.lexeme) for u in units)
            out.append(Subject(question[words[0].start:words[-1].end], lexemes, unit_lexemes))
        i = j
    return out


def subject_terms(question: str) -> list[Subject]:
    """The phrases naming what `question` is about, in order of appearance, duplicates removed."""
    toks = _tokens(question)
    found = _phrases(toks, question, anchored=True) or _phrases(toks, question, anchored=False)
    seen: dict[tuple[str, ...], Subject] = {}
    for s in found:
        seen.setdefault(s.lexemes, s)
    return list(seen.values())


def _equivalents() -> dict[str, tuple[str, ...]]:
    groups = [tuple(dict.fromkeys(lx for w in g if (lx := lexeme(w)))) for g in _EQUIVALENT_WORDS]
    return {lx: g for g in groups for lx in g}


_EQUIVALENTS = _equivalents()


def subject_lexemes(subjects: Sequence[Subject]) -> list[str]:
    """Every lexeme to look up: the subjects' own, and the equivalents of their head nouns."""
    own = [lx for s in subjects for lx in s.lexemes]
    return list(dict.fromkeys([*own, *(e for s in subjects for h in s.heads() for e in _EQUIVALENTS.get(h, ()))]))


def _held_anywhere(head: str, df: Mapping[str, int]) -> bool:
    return any(df.get(lx, 0) > 0 for lx in _EQUIVALENTS.get(head, (head,)))


def _canonical(lx: str) -> str:
    return _EQUIVALENTS.get(lx, (lx,))[0]


def _held(lexemes: tuple[str, ...], passage: Sequence[str]) -> tuple[str, ...]:
    """The lexemes of a phrase that `passage` (its lexemes in order, equivalents made one) does not hold
    within one window of len(phrase) + WINDOW_SLACK words; () when it holds them all there."""
    lexemes = tuple(_canonical(lx) for lx in lexemes)
    want = set(lexemes)
    present = want & set(passage)
    if present != want:
        return tuple(lx for lx in lexemes if lx not in present)
    if len(want) == 1:
        return ()
    width = len(want) + WINDOW_SLACK
    positions = [(p, lx) for p, lx in enumerate(passage) if lx in want]
    for a in range(len(positions)):
        inside = {lx for p, lx in positions[a:] if p - positions[a][0] < width}
        if inside == want:
            return ()
    return lexemes  # every word is there, never together: the phrase is not


def _checked(s: Subject) -> list[tuple[str, ...]]:
    """What a top passage must hold of `s`: a short phrase whole (« pompe à chaleur », « accidents de la
    vie »); in a longer one, each unit of one or two words whole and the head of a longer unit."""
    if len(s.lexemes) <= 3:
        return [s.lexemes]
    return [u if len(u) <= 2 else u[:1] for u in (s.units or (s.lexemes,)) if u]


def absent_subject(subjects: Sequence[Subject], df: Mapping[str, int], top_texts: Sequence[str],
                   top: int = TOP) -> Absence | None:
    """The first subject whose head noun no passage of the collections holds (`df`: lexeme -> passages
    holding it, as ragfr_term_stats keeps it; a lexeme it lacks counts as 0; `strong`), else the first with
    any word no passage holds, else the first that none of the `top` best passages holds (_checked), else
    None."""
    for s in subjects:
        heads = tuple(h for h in s.heads() if not _held_anywhere(h, df))
        if heads:
            return Absence(s, "collection", heads, strong=True)
    for s in subjects:
        missing = tuple(lx for lx in s.lexemes if not _held_anywhere(lx, df))
        if missing:
            return Absence(s, "collection", missing)
    passages = [[_canonical(lx) for lx in analyze(t)] for t in top_texts[:top]]
    if not passages:
        return None
    for s in subjects:
        for part in _checked(s):
            gaps = [_held(part, p) for p in passages]
            if all(gaps):
                return Absence(s, "top", min(gaps, key=len))
    return None
