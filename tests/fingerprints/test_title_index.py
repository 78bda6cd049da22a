"""TitleIndex decides exactly as stage 1's brute-force scan, for any settings."""

from __future__ import annotations

import dataclasses
from collections.abc import Callable

from hypothesis import given, settings
from hypothesis import strategies as st

from feedmd.fingerprints.headlines import Headline, HeadlineMatch, match_headlines, simhash
from feedmd.fingerprints.title_index import TitleIndex
from feedmd.settings import Settings

DEFAULTS = Settings()
VOCABULARY = ("pope", "leo", "surgery", "lung", "vatican", "hospital", "rome", "growth", "gemelli")
# Thresholds around the boundaries: 3/7 and 0.85 have long exact fractions, 0 and 1 the ends.
THRESHOLDS = (0.0, 0.1, 0.25, 1 / 3, 3 / 7, 0.5, 0.6, 2 / 3, 0.75, 0.85, 0.9, 1.0)
FAR = (1 << 64) - 1  # 64 bits from 0: never a simhash match below 64 bits

Matcher = Callable[[Headline, Headline, Settings], HeadlineMatch | None]


def brute_force(
    query: Headline, kept: list[tuple[Headline, int]], config: Settings, match: Matcher
) -> tuple[int, HeadlineMatch] | None:
    """Stage 1's loop: the first kept headline that matches, in order."""
    for headline, payload in kept:
        found = match(query, headline, config)
        if found is not None:
            return payload, found
    return None


def all_matches(
    query: Headline, kept: list[tuple[Headline, int]], config: Settings, match: Matcher
) -> list[tuple[int, HeadlineMatch]]:
    """Every kept headline that matches, in order (what stage 1 walks past its gate)."""
    found = ((payload, match(query, headline, config)) for headline, payload in kept)
    return [(payload, matched) for payload, matched in found if matched is not None]


def no_jaccard(first: Headline, second: Headline, config: Settings) -> HeadlineMatch | None:
    """A stricter matcher: the index must keep looking past candidates it rejects."""
    found = match_headlines(first, second, config)
    return None if found is None or found.rule == "jaccard" else found


headline_specs = st.tuples(
    st.frozensets(st.sampled_from(VOCABULARY), max_size=len(VOCABULARY)),
    st.sampled_from(("tokens", "random", "near", "near")),
    st.integers(min_value=0, max_value=1000),
    st.lists(st.integers(min_value=0, max_value=63), max_size=5),
    st.integers(min_value=0, max_value=FAR),
)

settings_strategy = st.builds(
    Settings,
    headline_min_tokens=st.integers(min_value=1, max_value=5),
    jaccard_threshold=st.sampled_from(THRESHOLDS),
    containment_threshold=st.sampled_from(THRESHOLDS),
    containment_min_tokens=st.integers(min_value=1, max_value=6),
    simhash_max_bits=st.integers(min_value=0, max_value=6),
)


def build_batch(specs: list[tuple[frozenset[str], str, int, list[int], int]]) -> list[Headline]:
    """Headlines from specs; a 'near' simhash flips a few bits of an earlier headline's."""
    batch: list[Headline] = []
    for tokens, kind, base, flips, value in specs:
        if kind == "tokens":
            value = simhash(tuple(sorted(tokens)))
        elif kind == "near" and batch:
            value = batch[base % len(batch)].simhash
            for bit in flips:
                value ^= 1 << bit
        batch.append(Headline(tokens, value))
    return batch


@settings(max_examples=300, deadline=None)
@given(
    specs=st.lists(headline_specs, min_size=1, max_size=40),
    config=settings_strategy,
    counts=st.dictionaries(st.sampled_from(VOCABULARY), st.integers(0, 50)),
    strict=st.booleans(),
)
def test_first_match_is_the_brute_force_answer(
    specs: list[tuple[frozenset[str], str, int, list[int], int]],
    config: Settings,
    counts: dict[str, int],
    strict: bool,
) -> None:
    match: Matcher = no_jaccard if strict else match_headlines
    index: TitleIndex[int] = TitleIndex(config, match, token_counts=counts)
    kept: list[tuple[Headline, int]] = []
    for number, headline in enumerate(build_batch(specs)):
        expected = brute_force(headline, kept, config, match)
        assert index.first_match(headline) == expected
        assert list(index.matches(headline)) == all_matches(headline, kept, config, match)
        if expected is None:
            index.add(headline, number)
            kept.append((headline, number))
    assert list(index.records()) == [
        (h, n) for h, n in kept if len(h.tokens) >= config.headline_min_tokens
    ]


@settings(max_examples=60, deadline=None)
@given(
    specs=st.lists(headline_specs, min_size=1, max_size=25),
    config=settings_strategy,
    bits=st.sampled_from((16, 40, 63, 64, -1)),
    jaccard=st.sampled_from((*THRESHOLDS, -1.0)),
)
def test_wide_or_negative_simhash_limits_stay_exact(
    specs: list[tuple[frozenset[str], str, int, list[int], int]],
    config: Settings,
    bits: int,
    jaccard: float,
) -> None:
    config = dataclasses.replace(config, simhash_max_bits=bits, jaccard_threshold=jaccard)
    index: TitleIndex[int] = TitleIndex(config)
    kept: list[tuple[Headline, int]] = []
    for number, headline in enumerate(build_batch(specs)):
        expected = brute_force(headline, kept, config, match_headlines)
        assert index.first_match(headline) == expected
        assert list(index.matches(headline)) == all_matches(headline, kept, config, match_headlines)
        index.add(headline, number)
        kept.append((headline, number))


def h(tokens: str, value: int = 0) -> Headline:
    return Headline(frozenset(tokens.split()), value)


def test_containment_only_match() -> None:
    index: TitleIndex[str] = TitleIndex(DEFAULTS)
    index.add(h("pope leo undergo lung surgery gemelli hospital vatican rome", FAR), "long")
    found = index.first_match(h("pope leo undergo lung surgery", 0))
    assert found is not None
    assert found[0] == "long"
    assert found[1].rule == "containment"  # Jaccard 5/9 < 0.6, containment 5/5


def test_containment_needs_the_smaller_side_to_have_min_tokens() -> None:
    index: TitleIndex[str] = TitleIndex(DEFAULTS)
    index.add(h("pope leo lung surgery gemelli hospital vatican rome", FAR), "long")
    assert index.first_match(h("pope leo lung surgery", 0)) is None  # 4 < 5 tokens


def test_jaccard_exactly_at_threshold_matches_and_just_below_does_not() -> None:
    index: TitleIndex[str] = TitleIndex(DEFAULTS)
    index.add(h("pope leo lung surgery", FAR), "first")
    found = index.first_match(h("pope leo lung gemelli", 0))  # 3 / 5 == 0.6
    assert found is not None
    assert (found[0], found[1].rule, found[1].score) == ("first", "jaccard", 0.6)
    assert index.first_match(h("pope leo lung gemelli rome", 0)) is None  # 3 / 6


def test_simhash_only_match_at_the_bit_limit() -> None:
    index: TitleIndex[str] = TitleIndex(DEFAULTS)
    index.add(h("pope leo lung surgery", 0b111 << 40), "near")
    found = index.first_match(h("markets rally after rate cut", 0))
    assert found is not None
    assert (found[0], found[1].rule) == ("near", "simhash")
    assert index.first_match(h("markets rally after rate cut", 0b1111 << 40)) is not None
    assert index.first_match(h("markets rally after rate cut", 0b1111)) is None  # 7 bits


def test_earliest_record_wins_whatever_rule_finds_it() -> None:
    index: TitleIndex[int] = TitleIndex(DEFAULTS)
    index.add(h("markets rally after rate cut", 0b11), 0)  # simhash 2 bits from the query
    index.add(h("pope leo lung surgery", FAR), 1)  # identical tokens
    found = index.first_match(h("pope leo lung surgery", 0))
    assert found is not None
    assert (found[0], found[1].rule) == (0, "simhash")


def test_short_headlines_are_neither_kept_nor_matched() -> None:
    index: TitleIndex[str] = TitleIndex(DEFAULTS)
    index.add(h("live updates", 0), "short")
    assert len(index) == 0
    index.add(h("pope leo lung surgery", 0), "kept")
    assert index.first_match(h("live updates", 0)) is None  # same simhash, too short
    assert len(index) == 1


def test_unseen_tokens_and_empty_index() -> None:
    index: TitleIndex[str] = TitleIndex(DEFAULTS)
    assert index.first_match(h("pope leo lung surgery", 0)) is None
    index.add(h("pope leo lung surgery", FAR), "kept")
    found = index.first_match(h("pope leo lung surgery friday", 0))  # 4/5 Jaccard
    assert found is not None
    assert found[1].rule == "jaccard"


def test_from_records_keeps_order_and_payloads() -> None:
    records = [(h("pope leo lung surgery", FAR), "a"), (h("pope leo lung surgery", 0), "b")]
    index = TitleIndex.from_records(DEFAULTS, records)
    assert list(index.records()) == records
    found = index.first_match(h("pope leo lung surgery", 0))
    assert found is not None
    assert found[0] == "a"


def test_zero_threshold_matches_the_first_long_enough_headline() -> None:
    config = dataclasses.replace(DEFAULTS, jaccard_threshold=0.0)
    index: TitleIndex[str] = TitleIndex(config)
    index.add(h("pope leo lung surgery", FAR), "first")
    found = index.first_match(h("markets rally after rate cut", 0))
    assert found is not None
    assert (found[0], found[1].rule) == ("first", "jaccard")
