"""The subject of a question and whether the documents mention it (ragfr.analysis.subject, issue 47): what the
gate tells the analyst (« Aucun des documents joints ne mentionne « … ». ») must name what the question is
about, as typed, and must say nothing when a passage holds it."""

from __future__ import annotations

import json

from tests.support.paths import REPO

from ragfr.analysis.french import analyze
from ragfr.analysis.subject import Absence, absent_subject, subject_lexemes, subject_terms


def _surfaces(question: str) -> list[str]:
    return [s.surface for s in subject_terms(question)]


def test_subjects_are_the_noun_phrases_as_typed_not_the_question_words_or_the_inverted_verb() -> None:
    assert _surfaces("Comment payer le permis de conduire ?") == ["permis de conduire"]
    assert _surfaces("Les panneaux photovoltaïques sont-ils couverts ?") == ["panneaux photovoltaïques"]
    assert _surfaces("La panne de ma pompe à chaleur est-elle prise en charge ?") == ["panne de ma pompe à chaleur"]
    assert _surfaces("Quelle est la distance entre la Terre et la Lune ?") == ["distance", "Terre", "Lune"]
    # elided article, then a capitalised name mid-sentence without any article
    assert _surfaces("Quel est le rôle du pool Gareat ?") == ["pool Gareat"]
    assert _surfaces("Un syndicat du Lloyd's participe-t-il au traité ?") == ["syndicat du Lloyd", "traité"]


def test_what_kind_of_answer_is_wanted_and_verbs_taking_an_object_are_not_subjects() -> None:
    assert _surfaces("En quelle année Mélèce est-il parti pour Constantinople ?") == ["Mélèce", "Constantinople"]
    assert _surfaces("Quel est le montant de la franchise ?") == ["franchise"]
    # « a » is the verb here, not « à »; « dirigé » takes an object
    assert _surfaces("Qui a dirigé la communauté juive de France ?") == ["communauté juive de France"]
    assert _surfaces("Qui s'installe sur la 5e avenue ?") == ["avenue"]  # an ordinal is not a subject


def test_a_keyword_query_without_any_article_is_its_own_subject() -> None:
    assert _surfaces("delai declaration sinistre") == ["declaration sinistre"]


def test_lexemes_are_the_databases_and_deduplicated() -> None:
    subjects = subject_terms("La borne de recharge de la borne de recharge ?")
    assert len(subjects) == 1
    assert subjects[0].lexemes == tuple(dict.fromkeys(analyze("borne recharge")))
    assert subject_lexemes(subject_terms("Les vitres et les vitres cassées")) == analyze("vitres cassées")


def test_a_subject_no_document_holds_is_named_in_french() -> None:
    subjects = subject_terms("La borne de recharge de ma voiture est-elle couverte ?")
    df = {lx: 3 for lx in analyze("voiture couverte garantie")}  # "born", "recharg": df 0 (absent from the table)
    got = absent_subject(subjects, df, ["Le véhicule assuré est garanti."])
    assert isinstance(got, Absence) and got.where == "collection" and got.strong
    assert got.missing == tuple(analyze("borne recharge"))  # the head nouns (one per unit) no passage holds
    assert got.reason_fr() == "Aucun des documents joints ne mentionne « borne de recharge de ma voiture »."


def test_a_modifier_no_passage_holds_is_a_weak_absence_from_the_collection() -> None:
    """« panneaux solaires » are in the contract, « photovoltaïques » nowhere: the phrase is not mentioned,
    but its head is, so the gate may caution, not refuse."""
    subjects = subject_terms("Les panneaux photovoltaïques sont-ils couverts ?")
    df = {lx: 1 for lx in analyze("panneaux solaires")}
    got = absent_subject(subjects, df, ["Les antennes et panneaux solaires fixés au bâtiment."])
    assert got is not None and got.where == "collection" and not got.strong
    assert got.reason_fr() == "Aucun des documents joints ne mentionne « panneaux photovoltaïques »."


def test_a_phrase_the_collection_holds_word_by_word_but_no_top_passage_holds_together_is_absent_from_the_top() -> None:
    subjects = subject_terms("La garantie des accidents de la vie couvre-t-elle une chute ?")
    df = {lx: 5 for lx in analyze("garantie accidents vie chute")}
    passages = ["Les accidents de la circulation sont garantis.", "La responsabilité civile vie privée : une chute."]
    got = absent_subject(subjects, df, passages)
    assert got is not None and got.where == "top" and got.subject.surface == "garantie des accidents de la vie"
    assert got.reason_fr() == "Les passages retrouvés ne mentionnent pas « garantie des accidents de la vie »."
    # held together by one top passage: nothing to say
    assert absent_subject(subjects, df, ["La garantie des accidents de la vie couvre la chute."]) is None


def test_words_far_apart_in_a_passage_do_not_make_the_phrase() -> None:
    subjects = subject_terms("Que couvre la garantie bris de machine ?")
    df = {lx: 2 for lx in analyze("garantie bris machine")}
    far = "La garantie couvre le bris des vitres, des fenêtres, des portes, des vérandas et, à part, la machine."
    got = absent_subject(subjects, df, [far])
    assert got is not None and got.where == "top"
    assert absent_subject(subjects, df, ["Garantie bris de machine : le lave-linge."]) is None


def test_nothing_is_said_when_there_is_no_subject_or_no_passage_lacks_it() -> None:
    assert subject_terms("Comment ?") == []
    assert absent_subject([], {}, ["texte"]) is None
    subjects = subject_terms("Quel est le délai de déclaration du sinistre ?")
    df = {lx: 4 for lx in analyze("délai déclaration sinistre")}
    assert absent_subject(subjects, df, ["Le délai de déclaration du sinistre est de cinq jours."]) is None


def test_every_hand_written_absent_subject_is_absent_from_the_golden_contracts() -> None:
    """eval/gate/near-golden.jsonl: each absent_subject must really be absent, as a phrase, from every golden
    document (the set's premise), and the subject rule must find a subject in every question."""
    docs = [json.loads(line) for line in (REPO / "eval" / "golden" / "corpus.jsonl").read_text().splitlines()]
    texts = [" " + " ".join(analyze(f"{d['title']} {d['text']}")) + " " for d in docs]
    rows = [json.loads(line) for line in (REPO / "eval" / "gate" / "near-golden.jsonl").read_text().splitlines()]
    assert len(rows) >= 60
    for row in rows:
        phrase = " ".join(lx for lx in analyze(row["absent_subject"]) if lx not in ("de", "d", "a", "la", "l"))
        assert not any(f" {phrase} " in t for t in texts), row
        assert subject_terms(row["text"]), row


def test_participles_and_infinitives_are_verbs_by_their_place() -> None:
    """After an auxiliary (or an unaccented « a »), a lower-case participle is the question's verb; after
    « pour », an infinitive: neither names what the question is about (PIAF questions cautioned for
    « conquis », « démissionné », « agir »: docs/retrieval-quality.md, "The gate on corpora it never saw")."""
    assert _surfaces("quel pays a conquis kubilai khan?") == ["kubilai khan"]
    assert _surfaces("Comment s’appelait le vice-maire qui a démissionné en 1929 ?") == ["vice-maire"]
    assert _surfaces("combien de temps ai-je pour agir contre mon assureur ?") == ["temps", "assureur"]
    # a capitalised word after « a » is a name, an accented « à » still introduces, « pour » + noun stays
    assert _surfaces("Qui est arrivé a Paris ?") == ["Paris"]
    assert _surfaces("Le vol à domicile est-il couvert ?") == ["vol à domicile"]
    assert _surfaces("Une franchise pour dossier incomplet ?") == ["franchise", "dossier incomplet"]


def test_answer_types_and_idioms_are_not_subjects() -> None:
    assert _surfaces("Quelle est la nationalité de Richard Heber") == ["Richard Heber"]
    assert _surfaces("Pourquoi Samir Nasri fait-il l'objet de critiques ?") == ["Samir Nasri", "critiques"]
    assert _surfaces("Au bout de combien de temps une action est-elle prescrite ?") == ["action"]


def test_an_everyday_word_is_held_when_the_documents_use_its_formal_equivalent() -> None:
    """« voiture » in the question, « véhicule » in the auto contract: not a subject the documents lack. The
    equivalents are looked up with the subject's own lexemes (one query)."""
    subjects = subject_terms("Ma voiture est-elle couverte en cas de vol ?")
    assert "vehicul" in subject_lexemes(subjects)
    assert absent_subject(subjects, {"vehicul": 12, "vol": 30}, ["Le vol du véhicule est garanti."]) is None
    lacking = absent_subject(subjects, {"vol": 30}, ["Le vol est garanti."])
    assert lacking is not None and lacking.strong and lacking.missing == ("voitur",)
