"""The language a headline is written in, when it can be told: for event grouping, which
compares a German and an English report of one event under its own threshold (their
cosines run ~0.07 lower than two English ones' for the same pair of meanings,
docs/events.md).

py3langid (langid.py's maintained port: BSD-3-Clause, numpy only, its model inside the
package) over a fixed set of news languages (``NEWS_LANGUAGES``: restricting it keeps
English headlines from reading as Luxembourgish or Nigerian Pidgin), with its
probabilities normalised.

A headline's best guess is often unsure (a median English UCI headline gets p 0.85, one
in four under 0.6, and 3% guess German or French first), so two headlines count as two
languages (``in_two_languages``) when their best guesses differ and each is unlikely,
at most ``max_overlap``, to be in the other's language. Measured on the development data
at 0.05: 0 of 2,249 English STS pairs and 0.33% of random pairs of English UCI headlines
count as two languages; 92% of German-English and 89% of French-English translated pairs
do, and 0% of German-German.
"""

from __future__ import annotations

from functools import lru_cache

# Languages with a large press among the e5 model's 100: the set py3langid chooses from.
NEWS_LANGUAGES = [
    "af",
    "ar",
    "bg",
    "bn",
    "ca",
    "cs",
    "da",
    "de",
    "el",
    "en",
    "es",
    "et",
    "fa",
    "fi",
    "fr",
    "he",
    "hi",
    "hr",
    "hu",
    "id",
    "it",
    "ja",
    "ko",
    "lt",
    "lv",
    "ms",
    "nl",
    "no",
    "pl",
    "pt",
    "ro",
    "ru",
    "sk",
    "sl",
    "sr",
    "sv",
    "sw",
    "ta",
    "th",
    "tl",
    "tr",
    "uk",
    "ur",
    "vi",
    "zh",
]
# ``language_of`` names a language at this probability or more: 2 of 3,819 English UCI
# headlines then read as another language (none at 0.8), 96.7% of German ones as German.
MIN_PROBABILITY = 0.5
_CACHED_TITLES = 65_536


@lru_cache(maxsize=1)
def _identifier():  # type: ignore[no-untyped-def]
    from py3langid.langid import MODEL_FILE, LanguageIdentifier

    identifier = LanguageIdentifier.from_model_file(MODEL_FILE, norm_probs=True)
    identifier.set_languages(NEWS_LANGUAGES)
    return identifier


@lru_cache(maxsize=_CACHED_TITLES)
def language_probabilities(text: str) -> tuple[tuple[str, float], ...]:
    """Each news language's probability for ``text``, the likeliest first (empty for a
    text without letters)."""
    if not any(char.isalpha() for char in text):
        return ()
    return tuple((str(code), float(p)) for code, p in _identifier().rank(text))


def language_of(text: str, min_probability: float = MIN_PROBABILITY) -> str | None:
    """The ISO 639-1 code of ``text``'s language, or None when it cannot be told (its
    likeliest language is under ``min_probability``)."""
    ranked = language_probabilities(text)
    return ranked[0][0] if ranked and ranked[0][1] >= min_probability else None


def in_two_languages(a: str, b: str, max_overlap: float) -> bool:
    """True when ``a`` and ``b`` are best read as two languages and each is at most
    ``max_overlap`` likely to be in the other's (see the module docstring)."""
    first, second = dict(language_probabilities(a)), dict(language_probabilities(b))
    if not first or not second:
        return False
    best_a, best_b = max(first, key=first.__getitem__), max(second, key=second.__getitem__)
    return (
        best_a != best_b
        and first.get(best_b, 0.0) <= max_overlap
        and second.get(best_a, 0.0) <= max_overlap
    )


def pair_languages(a: str, b: str, max_overlap: float) -> tuple[str, ...]:
    """The languages of a pair of headlines as far as they can be told: two codes in
    alphabetical order when ``in_two_languages`` ("de", "en"), one when both are told to be
    in the same language (``language_of``), none when either is unsure."""
    if in_two_languages(a, b, max_overlap):
        first, second = language_probabilities(a)[0][0], language_probabilities(b)[0][0]
        return tuple(sorted((first, second)))
    first, second = language_of(a), language_of(b)
    return (first,) if first is not None and first == second else ()
