"""The derived `stem-match` slice, on hand-picked French pairs."""

from ragfr.eval.slices import stem_only_match


def test_inflected_form_matches_only_through_its_stem() -> None:
    assert stem_only_match("biens sinistrés", "Le sinistre doit être déclaré.")
    assert stem_only_match("fraudes", "lutte contre la fraude")


def test_same_word_or_accent_only_is_not_a_stem_match() -> None:
    assert not stem_only_match("sinistre", "Le sinistre doit être déclaré.")
    assert not stem_only_match("delai", "un délai de cinq jours")  # folding, not stemming


def test_stop_words_and_unrelated_words_do_not_count() -> None:
    assert not stem_only_match("les voitures", "le contrat")  # 'les' -> 'le' is a stop word
    assert not stem_only_match("tempête", "Le sinistre doit être déclaré.")
