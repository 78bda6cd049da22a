"""Which language a headline is in, and when two headlines count as two languages."""

from __future__ import annotations

from feedmd.fingerprints.language import in_two_languages, language_of

OVERLAP = 0.05


def test_news_languages_are_told_from_a_headline() -> None:
    for text, code in (
        ("Papst Leo muss operiert werden", "de"),
        ("El papa León será operado", "es"),
        ("Le pape Léon va être opéré", "fr"),
        ("Papież Leon przejdzie operację", "pl"),
        ("Papa Leo ameliyat olacak", "tr"),
        ("البابا ليو سيخضع لعملية جراحية", "ar"),
        ("Trump wins Iowa caucus by a wide margin", "en"),
    ):
        assert language_of(text) == code, text
    assert language_of("2026") is None and language_of("") is None


def test_two_languages_only_when_each_is_unlikely_in_the_others() -> None:
    english = "Pope Leo to undergo lung surgery"  # an unsure guess on its own
    assert in_two_languages(
        english, "Papst Leo muss sich einer Lungenoperation unterziehen", OVERLAP
    )
    assert in_two_languages("Le pape Léon va être opéré", english, OVERLAP)
    assert not in_two_languages(english, "Pope Leo will undergo an operation", OVERLAP)
    assert not in_two_languages("Papst Leo operiert", "Papst Leo muss operiert werden", OVERLAP)
    # English headlines that py3langid first guesses as German still pair as English
    assert not in_two_languages("Bayern Munich beat Dortmund", "Bayern win the title", OVERLAP)
    assert not in_two_languages("12:30", "Papst Leo muss operiert werden", OVERLAP)
    # the bound decides: anything counts as two languages at 1.0, nothing at 0
    assert in_two_languages("Bayern Munich beat Dortmund", "Bayern win the title", 1.0) is (
        language_of("Bayern Munich beat Dortmund", 0.0) != language_of("Bayern win the title", 0.0)
    )
    assert not in_two_languages(english, "Papst Leo muss operiert werden", 0.0)


def test_pair_languages_names_one_language_two_or_none() -> None:
    from feedmd.fingerprints.language import pair_languages

    french = "Le pape Léon XIV sera opéré du poumon, annonce le Vatican"
    assert pair_languages(french, "Le pape Léon va être opéré des poumons", OVERLAP) == ("fr",)
    german = "Papst Leo XIV. wird an der Lunge operiert"
    english = "Pope Leo XIV will have lung surgery, Vatican says"
    assert pair_languages(german, english, OVERLAP) == ("de", "en")
    assert pair_languages(english, german, OVERLAP) == ("de", "en")
    # a side that cannot be told (no letters) names no language
    assert pair_languages("12:30", french, OVERLAP) == ()
    # two languages not told apart (each a little likely in the other): neither one nor two
    assert pair_languages(german, english, 0.0) == ()
