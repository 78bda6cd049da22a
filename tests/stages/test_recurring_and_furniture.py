"""Recurring titles (an identical headline of the same publisher is confirmed on the body)
and host furniture (the same body under unrelated headlines of one host is not a reprint),
both sides of each rule."""

from __future__ import annotations

import dataclasses

from conftest import at, fixture_bodies, story

from feedmd.fingerprints.headlines import normalize_headline, simhash
from feedmd.models import Entry, Match, Page, StoredBody, StoredHeadline, WindowSnapshot
from feedmd.settings import Settings
from feedmd.stages import stage1, stage2
from feedmd.stages.scrape import fingerprint

SETTINGS = Settings()
WIRE = fixture_bodies()["pope-cp-wire"]
OTHER = story("council", 6)
BRIEFING = "Morning briefing: what you need to know today"


def entry(key: str, host: str, title: str, minute: int) -> Entry:
    url = f"https://{host}/{key}"
    return Entry(
        feed="f",
        org="o",
        entry_id=key,
        link=url,
        url=url,
        title=title,
        publisher=host,
        published=at(8, minute),
        fetched=at(12),
    )


def page(url_hash: str, paragraphs: list[str]) -> Page:
    base = Page(url_hash=url_hash, url="", org="o", status="ok", markdown="\n\n".join(paragraphs))
    return fingerprint(base, SETTINGS)


def first_stage(entries: list[Entry], settings: Settings = SETTINGS) -> stage1.Stage1Result:
    return stage1.decide(entries, WindowSnapshot(), [], settings, at(12))


def both_stages(
    entries: list[Entry],
    bodies: dict[str, list[str] | None],
    settings: Settings = SETTINGS,
    snapshot: WindowSnapshot | None = None,
) -> dict[str, object]:
    first = stage1.decide(entries, snapshot or WindowSnapshot(), [], settings, at(12))
    pages = {}
    for candidate in first.survivors:
        paragraphs = bodies[candidate.entry.entry_id]
        if paragraphs is None:  # a page with too little prose for a digest
            paragraphs = ["A short caption."]
        pages[("o", candidate.page_key)] = page(candidate.page_key, paragraphs)
    second = stage2.decide(first.survivors, pages, snapshot or WindowSnapshot(), settings, at(12))
    final = stage2.finalize(first, second)
    return {c.entry.entry_id: final[c.key] for c in first.candidates}


# --- stage 1: a recurring title survives to be confirmed on the body -----------------------


def test_an_identical_title_of_the_same_publisher_survives_with_the_title_decision() -> None:
    result = first_stage(
        [entry("mon", "daily.example", BRIEFING, 1), entry("tue", "www.daily.example", BRIEFING, 2)]
    )
    tue = next(c for c in result.candidates if c.entry.entry_id == "tue")
    decision = result.decisions[tue.key]
    assert decision.decision == "kept"
    assert decision.evidence["confirm_on_body"] is True
    assert tue.recurring is not None
    assert (tue.recurring.decision, tue.recurring.rule, tue.recurring.score) == (
        "duplicate",
        "jaccard",
        1.0,
    )


def test_an_identical_title_of_another_publisher_is_still_dropped_on_the_title() -> None:
    result = first_stage(
        [entry("a", "daily.example", BRIEFING, 1), entry("b", "other.example", BRIEFING, 2)]
    )
    decision = result.decisions[result.candidates[1].key]
    assert (decision.decision, decision.rule) == ("duplicate", "jaccard")
    assert result.candidates[1].recurring is None


def test_a_near_identical_title_of_the_same_publisher_is_dropped_as_before() -> None:
    result = first_stage(
        [
            entry("a", "daily.example", "Pope Leo to have lung surgery on Friday", 1),
            entry("b", "daily.example", "Pope Leo to have lung surgery on Friday, Vatican", 2),
        ]
    )
    decision = result.decisions[result.candidates[1].key]
    assert decision.decision == "duplicate" and decision.score < 1


def test_a_recurring_title_of_a_stored_item_of_the_same_publisher_survives() -> None:
    tokens = normalize_headline(BRIEFING)
    stored = StoredHeadline(
        item_id=3,
        feed="f",
        org="o",
        title=BRIEFING,
        tokens=tokens,
        simhash=simhash(tokens),
        published=at(7),
        host="daily.example",
    )
    snapshot = WindowSnapshot(headlines=(stored,))
    same = stage1.decide([entry("b", "daily.example", BRIEFING, 1)], snapshot, [], SETTINGS, at(12))
    assert same.candidates[0].recurring is not None
    assert same.candidates[0].recurring.matched == Match(item_id=3)
    other = stage1.decide(
        [entry("b", "other.example", BRIEFING, 1)], snapshot, [], SETTINGS, at(12)
    )
    assert other.decisions[other.candidates[0].key].decision == "duplicate"


def test_the_check_switched_off_drops_on_the_title() -> None:
    off = dataclasses.replace(SETTINGS, recurring_title_check=False)
    result = first_stage(
        [entry("a", "daily.example", BRIEFING, 1), entry("b", "daily.example", BRIEFING, 2)], off
    )
    assert result.decisions[result.candidates[1].key].decision == "duplicate"


# --- stage 2: the body confirms or refutes the recurring title -----------------------------


def recurring_pair() -> list[Entry]:
    return [entry("mon", "daily.example", BRIEFING, 1), entry("tue", "daily.example", BRIEFING, 2)]


def test_a_recurring_title_over_the_same_body_is_a_duplicate() -> None:
    decisions = both_stages(recurring_pair(), {"mon": WIRE, "tue": WIRE})
    tue = decisions["tue"]
    assert (tue.decision, tue.stage, tue.rule) == ("duplicate", "stage2", "tlsh")
    assert tue.evidence["recurring_title"] == "same title and same body"


def test_a_recurring_title_over_another_body_is_another_story() -> None:
    decisions = both_stages(recurring_pair(), {"mon": WIRE, "tue": OTHER})
    tue = decisions["tue"]
    assert (tue.decision, tue.stage) == ("kept", "stage2")
    assert tue.evidence["recurring_title"] == "same title, different body: another story"


def test_a_recurring_title_without_a_body_to_compare_is_decided_by_the_title() -> None:
    decisions = both_stages(recurring_pair(), {"mon": WIRE, "tue": None})
    tue = decisions["tue"]
    assert (tue.decision, tue.stage, tue.rule) == ("duplicate", "stage1", "jaccard")
    assert tue.evidence["body_not_compared"] == "no digest"


# --- stage 2: host furniture ---------------------------------------------------------------

WALL = story("wall", 6)  # the same page text behind two unrelated headlines


def furniture_pair(second_host: str, second_title: str) -> list[Entry]:
    return [
        entry("tax", "paper.example", "Government plans a new fuel tax", 1),
        entry("strike", second_host, second_title, 2),
    ]


def test_the_same_body_under_unrelated_headlines_of_one_host_is_furniture() -> None:
    decisions = both_stages(
        furniture_pair("paper.example", "Rail strike on Monday"), {"tax": WALL, "strike": WALL}
    )
    strike = decisions["strike"]
    assert strike.decision == "kept"
    assert strike.evidence["verdict"] == "host furniture"
    assert strike.evidence["furniture_of"] == {"run_key": "f\x1ftax"}


def test_headlines_sharing_a_word_make_it_a_reprint() -> None:
    decisions = both_stages(
        furniture_pair("paper.example", "Fuel tax: rail strike on Monday"),
        {"tax": WALL, "strike": WALL},
    )
    assert decisions["strike"].decision == "duplicate"


def test_another_host_makes_it_a_reprint() -> None:
    decisions = both_stages(
        furniture_pair("other.example", "Rail strike on Monday"), {"tax": WALL, "strike": WALL}
    )
    assert decisions["strike"].decision == "duplicate"


def test_furniture_check_switched_off_makes_it_a_reprint() -> None:
    off = dataclasses.replace(SETTINGS, host_furniture_check=False)
    decisions = both_stages(
        furniture_pair("paper.example", "Rail strike on Monday"), {"tax": WALL, "strike": WALL}, off
    )
    assert decisions["strike"].decision == "duplicate"


def stored_wall(*echoes: str) -> StoredBody:
    """Item 7 of the window: WALL under "Government plans a new fuel tax" on paper.example,
    with the headlines of the window's items stage 2 found carrying it."""
    wall = page("stored", WALL)
    assert wall.digest is not None
    return StoredBody(
        item_id=7,
        feed="f",
        org="o",
        digest=wall.digest,
        published=at(7),
        shingles=wall.shingles,
        host="paper.example",
        tokens=normalize_headline("Government plans a new fuel tax"),
        echoes=tuple(normalize_headline(title) for title in echoes),
    )


def test_furniture_against_a_stored_body_of_the_window() -> None:
    stored = stored_wall()
    snapshot = WindowSnapshot(bodies=(stored,))
    strike = [entry("strike", "www.paper.example", "Rail strike on Monday", 2)]
    decisions = both_stages(strike, {"strike": WALL}, snapshot=snapshot)
    assert decisions["strike"].evidence["verdict"] == "host furniture"
    assert decisions["strike"].evidence["furniture_of"] == {"item_id": 7}
    related = [entry("strike", "paper.example", "Fuel tax and a rail strike", 2)]
    decisions = both_stages(related, {"strike": WALL}, snapshot=snapshot)
    assert decisions["strike"].decision == "duplicate"


# --- stage 2: shared blocks (one body under unrelated stories, on any hosts) ---------------

UNRELATED = [
    ("tax", "paper.example", "Government plans a new fuel tax"),
    ("strike", "news.example", "Rail strike on Monday"),
    ("final", "sport.example", "United win the cup final"),
    ("storm", "weather.example", "Storm warning for the coast"),
]


def spread(titles: list[tuple[str, str, str]]) -> list[Entry]:
    return [entry(key, host, title, n + 1) for n, (key, host, title) in enumerate(titles)]


def test_one_body_under_three_unrelated_stories_is_a_shared_block() -> None:
    decisions = both_stages(spread(UNRELATED[:3]), {key: WALL for key, _, _ in UNRELATED})
    assert decisions["tax"].decision == "kept"
    for later in ("strike", "final"):  # the second was a reprint until the third showed
        assert decisions[later].decision == "kept"
        assert decisions[later].rule == "shared-block"
        assert decisions[later].evidence["verdict"] == "shared block"
        assert decisions[later].evidence["shared_with"] == {"run_key": "f\x1ftax"}
    assert decisions["final"].evidence["unrelated_stories"] == 3


def test_one_body_under_two_unrelated_stories_is_still_a_reprint() -> None:
    decisions = both_stages(spread(UNRELATED[:2]), {key: WALL for key, _, _ in UNRELATED})
    assert decisions["strike"].decision == "duplicate"


def test_headlines_linked_by_a_word_are_one_story() -> None:
    linked = [
        ("tax", "paper.example", "Government plans a new fuel tax"),
        ("strike", "news.example", "Fuel tax protest: rail strike on Monday"),
        ("final", "sport.example", "Rail union calls off the strike"),
    ]
    decisions = both_stages(spread(linked), {key: WALL for key, _, _ in linked})
    assert [decisions[key].decision for key, _, _ in linked] == ["kept", "duplicate", "duplicate"]


def test_shared_block_threshold_both_sides_and_off() -> None:
    bodies = {key: WALL for key, _, _ in UNRELATED}
    four = dataclasses.replace(SETTINGS, shared_block_min_stories=4)
    decisions = both_stages(spread(UNRELATED[:3]), bodies, four)
    assert decisions["final"].decision == "duplicate"
    decisions = both_stages(spread(UNRELATED), bodies, four)
    assert [decisions[key].decision for key, _, _ in UNRELATED] == ["kept"] * 4
    off = dataclasses.replace(SETTINGS, shared_block_min_stories=0)
    decisions = both_stages(spread(UNRELATED), bodies, off)
    assert [decisions[key].decision for key, _, _ in UNRELATED[1:]] == ["duplicate"] * 3


def test_the_stored_reprints_of_a_body_count_towards_its_stories() -> None:
    stored = stored_wall("Rail strike on Monday")  # dropped as a reprint by an earlier run
    final = [entry("final", "sport.example", "United win the cup final", 2)]
    decisions = both_stages(final, {"final": WALL}, snapshot=WindowSnapshot(bodies=(stored,)))
    assert decisions["final"].rule == "shared-block"
    assert decisions["final"].matched == Match(item_id=7)
    alone = dataclasses.replace(stored, echoes=())
    decisions = both_stages(final, {"final": WALL}, snapshot=WindowSnapshot(bodies=(alone,)))
    assert decisions["final"].decision == "duplicate"


def test_unrelated_stories_counts_groups_linked_through_shared_words() -> None:
    chain = [frozenset({"a", "b"}), frozenset({"c"}), frozenset({"b", "c"}), frozenset({"d"})]
    assert stage2.unrelated_stories(chain) == 2  # a-b and c joined through b-c; d alone
    assert stage2.unrelated_stories([frozenset(), frozenset({"x"})]) == 1  # no tokens: no say
    assert stage2.unrelated_stories([]) == 0


def test_shared_block_min_stories_of_one_is_refused() -> None:
    from click.testing import CliRunner

    from feedmd.cli.main import main

    refused = CliRunner().invoke(main, ["settings"], env={"FEEDMD_SHARED_BLOCK_MIN_STORIES": "1"})
    assert refused.exit_code != 0
    assert "0 (off) or at least 2" in refused.output
    taken = CliRunner().invoke(main, ["settings"], env={"FEEDMD_SHARED_BLOCK_MIN_STORIES": "2"})
    assert taken.exit_code == 0 and "shared_block_min_stories = 2" in taken.output


def test_a_hosts_furniture_counts_towards_a_shared_block() -> None:
    on_one_host = [(key, "paper.example", title) for key, _, title in UNRELATED[:3]]
    entries = spread([*on_one_host, UNRELATED[3]])  # then a fourth story on another host
    bodies = {key: WALL for key, _, _ in UNRELATED}
    decisions = both_stages(entries, bodies)
    assert [decisions[key].evidence.get("verdict") for key, _, _ in on_one_host[1:]] == [
        "host furniture"
    ] * 2
    assert decisions["strike"].rule == "host-furniture"  # stored so a later read counts it
    assert decisions["strike"].matched == Match(batch_key="f\x1ftax")
    assert decisions["storm"].rule == "shared-block"
    assert decisions["storm"].evidence["unrelated_stories"] == 4
    five = dataclasses.replace(SETTINGS, shared_block_min_stories=5)
    assert both_stages(entries, bodies, five)["storm"].decision == "duplicate"


def test_once_a_shared_block_it_stays_one_as_headlines_link_up() -> None:
    titles = [
        ("a", "one.example", "Alpha bravo golf"),
        ("b", "two.example", "Charlie delta hotel"),
        ("c", "three.example", "Echo foxtrot india"),  # three stories: a shared block
        ("d", "four.example", "Bravo charlie echo"),  # links all three into one group
    ]
    decisions = both_stages(spread(titles), {key: WALL for key, _, _ in titles})
    assert [decisions[key].rule for key, _, _ in titles] == [None, *["shared-block"] * 3]
    assert decisions["d"].evidence["unrelated_stories"] == 1


def test_a_stored_shared_block_stays_one() -> None:
    related = [entry("tax2", "news.example", "Fuel tax plans criticised", 2)]
    shared = dataclasses.replace(stored_wall(), shared_block=True)
    decisions = both_stages(related, {"tax2": WALL}, snapshot=WindowSnapshot(bodies=(shared,)))
    assert decisions["tax2"].rule == "shared-block"
    plain = WindowSnapshot(bodies=(stored_wall(),))
    assert both_stages(related, {"tax2": WALL}, snapshot=plain)["tax2"].decision == "duplicate"
