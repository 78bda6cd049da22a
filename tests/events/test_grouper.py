"""The grouper on both sides of the threshold, with vetoes, across batches and within one;
vectors here are made by hand so the cosines are exact."""

from __future__ import annotations

import dataclasses

import numpy as np
import pytest

from feedmd.events.grouper import EventItem, MemoryWindow, assign_events
from feedmd.fingerprints.vectors import normalise
from feedmd.settings import Settings
from feedmd.settings.events import language_thresholds

SETTINGS = Settings()


def vector_at(cosine: float, base: int = 0, other: int = 1) -> np.ndarray:
    """A unit vector whose cosine to the axis ``base`` is ``cosine``."""
    v = np.zeros(384, dtype=np.float32)
    v[base] = cosine
    v[other] = np.sqrt(1 - cosine**2)
    return normalise(v)[0]


def axis(i: int) -> np.ndarray:
    return vector_at(1.0, i, (i + 1) % 384)


def window_with(*items: tuple[str, str, np.ndarray]) -> MemoryWindow:
    window = MemoryWindow()
    for item_id, title, vector in items:
        window.add(item_id, "event-" + item_id, title, vector)
    return window


def test_joins_above_the_threshold_and_not_below() -> None:
    t = SETTINGS.event_threshold
    window = window_with(("old", "Pope Leo to have surgery", axis(0)))
    above = EventItem("a", "Pope Leo will undergo surgery", vector_at(t + 0.005))
    below = EventItem("b", "Pope Leo meets the press", vector_at(t - 0.005, other=2))
    joined, alone = assign_events([above], window, SETTINGS, "m") + assign_events(
        [below], window, SETTINGS, "m"
    )
    assert (joined.event_id, joined.joined, joined.is_canonical) == ("event-old", "old", False)
    assert joined.score >= t and joined.threshold == t and joined.model == "m"
    assert (alone.event_id, alone.joined, alone.is_canonical, alone.veto) == ("b", None, True, None)


def test_the_threshold_setting_moves_the_line() -> None:
    window = window_with(("old", "Pope Leo to have surgery", axis(0)))
    item = EventItem("a", "Pope Leo will undergo surgery", vector_at(0.80))
    assert assign_events([item], window, dataclasses.replace(SETTINGS, event_threshold=0.79), "m")[
        0
    ].joined
    strict = dataclasses.replace(SETTINGS, event_threshold=0.81)
    assert assign_events([item], window, strict, "m")[0].joined is None


def test_a_vetoed_twin_opens_an_event_and_says_why() -> None:
    window = window_with(("old", "Sensex rises 120 points in early trade", axis(0)))
    item = EventItem("a", "Sensex rises 85 points in early trade", vector_at(0.99))
    decision = assign_events([item], window, SETTINGS, "m")[0]
    assert decision.joined is None and decision.event_id == "a"
    assert decision.veto and decision.veto.startswith("different numbers")
    assert decision.score == pytest.approx(0.99, abs=2e-3)  # compared in the stored form


def test_a_vetoed_best_candidate_does_not_hide_the_next() -> None:
    window = window_with(
        ("twin", "Gold falls on Fed worries", vector_at(0.995, 0, 1)),
        ("rewrite", "Gold gains as Fed worries grow", vector_at(0.99, 0, 2)),
    )
    item = EventItem("a", "Gold rises on Fed worries", axis(0))
    decision = assign_events([item], window, SETTINGS, "m")[0]
    assert decision.joined == "rewrite" and decision.event_id == "event-rewrite"


def test_items_of_one_batch_join_each_other_oldest_first() -> None:
    items = [
        EventItem("first", "Pope Leo to have surgery", axis(0)),
        EventItem("second", "Pope Leo will undergo surgery", vector_at(0.99)),
        EventItem("third", "Pope to undergo an operation", vector_at(0.98, 0, 2)),
        EventItem("other", "Oil steady as traders wait", axis(5)),
    ]
    decisions = assign_events(items, MemoryWindow(), SETTINGS, "m")
    assert [d.event_id for d in decisions] == ["first", "first", "first", "other"]
    assert [d.joined for d in decisions] == [None, "first", "first", None]


def test_memory_window_forgets_the_oldest() -> None:
    window = window_with(("a", "A", axis(0)), ("b", "B", axis(1)))
    window.drop_oldest(1)
    assert len(window) == 1
    assert window.nearest(axis(0), 5, 0.5) == []
    assert [n.item_id for n in window.nearest(axis(1), 5, 0.5)] == ["b"]


def test_real_headlines_group_by_event(tmp_path: object) -> None:
    from feedmd.model.encoder import E5Encoder

    titles = [
        "Pope Leo to have surgery on Friday, Vatican says",
        "Pope Leo will undergo surgery, the Vatican announced",
        "Apple unveils new iPhone at September event",
    ]
    vectors = E5Encoder().encode(titles)
    items = [EventItem(str(i), t, vectors[i]) for i, t in enumerate(titles)]
    decisions = assign_events(items, MemoryWindow(), SETTINGS, "m")
    assert [d.event_id for d in decisions] == ["0", "0", "2"]


def test_two_languages_join_at_their_own_threshold() -> None:
    """Hand-made vectors, real headlines (their languages are what py3langid tells): a
    German headline joins an English one at the cross-language threshold, not below; two
    English headlines at that cosine stay apart."""
    settings = dataclasses.replace(SETTINGS, event_thresholds_by_language="")
    cross = settings.event_threshold_cross_language
    assert cross < settings.event_threshold
    english = ("old", "Pope Leo will have lung surgery, the Vatican says", axis(0))
    german = "Papst Leo XIV. wird an der Lunge operiert, teilt der Vatikan mit"
    above = EventItem("de-a", german, vector_at(cross + 0.002))
    below = EventItem("de-b", german, vector_at(cross - 0.002))
    same_language = EventItem("en", "Pope Leo to undergo an operation on his lung", above.vector)
    for item, joins in ((above, True), (below, False), (same_language, False)):
        (decision,) = assign_events([item], window_with(english), settings, "m")
        assert (decision.joined == "old") is joins, item.item_id
    (decision,) = assign_events([above], window_with(english), settings, "m")
    assert decision.threshold == cross


def test_a_language_of_its_own_joins_at_its_own_threshold() -> None:
    """``event_thresholds_by_language``: two French headlines join at the French entry,
    not at ``event_threshold`` below it; English pairs keep ``event_threshold``; a pair
    across two languages takes its own entry over ``event_threshold_cross_language``."""
    french = "Le pape Léon XIV sera opéré du poumon, annonce le Vatican"
    window = window_with(("old", french, axis(0)))
    settings = dataclasses.replace(
        SETTINGS, event_threshold=0.93, event_thresholds_by_language="fr=0.95 de-en=0.89"
    )
    for cosine, joins in ((0.955, True), (0.945, False)):
        item = EventItem("fr", "Le pape Léon va être opéré des poumons", vector_at(cosine))
        (decision,) = assign_events([item], window, settings, "m")
        assert (decision.joined == "old") is joins, cosine
        assert decision.threshold == 0.95 or not joins
    english = window_with(("old", "Pope Leo XIV will have lung surgery, Vatican says", axis(0)))
    item = EventItem("en", "Pope Leo will undergo surgery on his lung", vector_at(0.945))
    (decision,) = assign_events([item], english, settings, "m")
    assert (decision.joined, decision.threshold) == ("old", 0.93)
    for cosine, joins in ((0.895, True), (0.885, False)):
        item = EventItem("de", "Papst Leo XIV. wird an der Lunge operiert", vector_at(cosine))
        (decision,) = assign_events([item], english, settings, "m")
        assert (decision.joined == "old") is joins, cosine
    # without the entry the pair takes event_threshold_cross_language
    plain = dataclasses.replace(settings, event_thresholds_by_language="fr=0.95")
    item = EventItem("de", "Papst Leo XIV. wird an der Lunge operiert", vector_at(0.895))
    (decision,) = assign_events([item], english, plain, "m")
    assert decision.joined is None


def test_two_arabic_headlines_join_at_the_carried_arabic_entry() -> None:
    """The default Arabic entry (0.96, carried over by `feedmd eval languages`): two
    Arabic headlines join at it, not just under it, where two English ones would."""
    assert dict(language_thresholds(SETTINGS.event_thresholds_by_language))["ar"] == 0.96
    window = window_with(("old", "الفاتيكان: البابا ليو سيخضع لعملية جراحية في الرئة", axis(0)))
    for cosine, joins in ((0.962, True), (0.957, False)):
        item = EventItem("ar", "البابا ليو الرابع عشر يجري عملية في الرئة", vector_at(cosine))
        (decision,) = assign_events([item], window, SETTINGS, "m")
        assert (decision.joined == "old") is joins, cosine
        # either way the decision names the Arabic entry and the pair's cosine (stored form:
        # the vectors' int8 codes move a cosine by up to ~0.002)
        assert (decision.score, decision.threshold) == (pytest.approx(cosine, abs=2e-3), 0.96)
    assert SETTINGS.event_threshold < 0.957


def test_an_item_opening_its_event_records_what_kept_it_apart() -> None:
    """Below its pair's threshold: the nearest candidate's cosine and that threshold;
    nothing within reach of any pair's threshold: 0.0 and ``event_threshold``."""
    window = window_with(("old", "Pope Leo XIV will have lung surgery, Vatican says", axis(0)))
    german = "Papst Leo XIV. wird an der Lunge operiert"
    cross = dict(language_thresholds(SETTINGS.event_thresholds_by_language))["de-en"]
    (decision,) = assign_events(
        [EventItem("de", german, vector_at(cross - 0.003))], window, SETTINGS, "m"
    )
    assert decision.joined is None
    assert (decision.score, decision.threshold) == (pytest.approx(cross - 0.003, abs=2e-3), cross)
    (decision,) = assign_events([EventItem("de", german, vector_at(0.5))], window, SETTINGS, "m")
    assert (decision.joined, decision.score, decision.threshold) == (
        None,
        0.0,
        SETTINGS.event_threshold,
    )


def test_the_window_is_asked_down_to_the_lowest_threshold() -> None:
    from feedmd.events.grouper import lowest_threshold

    settings = dataclasses.replace(
        SETTINGS,
        event_threshold=0.93,
        event_threshold_cross_language=0.9,
        event_thresholds_by_language="fr=0.95 pl-en=0.88",
    )
    assert lowest_threshold(settings) == 0.88
    assert lowest_threshold(dataclasses.replace(settings, event_thresholds_by_language="")) == 0.9


def test_across_languages_the_numbers_veto_stays_and_the_subject_veto_goes() -> None:
    window = window_with(("old", "ECB cuts its key interest rate to 2 percent", axis(0)))
    near = vector_at(SETTINGS.event_threshold_cross_language + 0.01)
    other_figure = EventItem("a", "EZB senkt den Leitzins auf 3 Prozent", near)
    (decision,) = assign_events([other_figure], window, SETTINGS, "m")
    assert decision.joined is None and decision.veto and "number" in decision.veto
    # German words lead where English ones do: not a subject the other lacks
    window = window_with(("old", "Pope Leo will have lung surgery, the Vatican says", axis(0)))
    lead = EventItem("b", "Papst Leo wird an der Lunge operiert, sagt der Vatikan", near)
    (decision,) = assign_events([lead], window, SETTINGS, "m")
    assert decision.joined == "old"


def test_a_german_and_an_english_report_of_one_event_group_and_of_two_do_not() -> None:
    from feedmd.model.encoder import E5Encoder

    titles = [
        "Pope Leo XIV will have lung surgery, Vatican says",
        "Papst Leo XIV. wird an der Lunge operiert",  # the same event
        "Papst Leo verschiebt seine Reise nach Portugal",  # another one
        "Apple stellt das neue iPhone 17 vor",
        "Apple unveils the new iPhone 17",  # the same event
        "Apple stellt neues MacBook vor",  # another one
    ]
    vectors = E5Encoder().encode(titles)
    items = [EventItem(str(i), t, vectors[i]) for i, t in enumerate(titles)]
    decisions = assign_events(items, MemoryWindow(), SETTINGS, "m")
    assert [d.event_id for d in decisions] == ["0", "0", "2", "3", "3", "5"]
    # with one threshold for all pairs, as before, the German report stood alone
    one = dataclasses.replace(
        SETTINGS,
        event_threshold_cross_language=SETTINGS.event_threshold,
        event_thresholds_by_language="",
    )
    assert assign_events(items, MemoryWindow(), one, "m")[1].event_id == "1"
