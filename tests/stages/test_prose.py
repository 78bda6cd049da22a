"""Markdown -> prose -> TLSH: seed 003's rule, both sides of each threshold."""

from __future__ import annotations

import dataclasses

from feedmd.config import Settings
from feedmd.stages.prose import markdown_to_prose, prose_line, prose_settings_version

SETTINGS = Settings()
TWELVE = "one two three four five six seven eight nine ten eleven twelve"


def test_line_needs_twelve_words() -> None:
    assert prose_line(TWELVE, SETTINGS) == TWELVE
    assert prose_line(TWELVE.rsplit(" ", 1)[0], SETTINGS) is None


def test_headings_tables_and_link_lists_are_dropped() -> None:
    assert prose_line("# " + TWELVE, SETTINGS) is None
    assert prose_line("| " + TWELVE + " |", SETTINGS) is None
    links = " ".join(f"[word{i} more{i}](https://x/{i})" for i in range(7))
    assert prose_line("- " + links, SETTINGS) is None


def test_link_share_boundary() -> None:
    # 6 of 12 words in a link = 0.5: kept; 7 of 12 is mostly links: dropped
    half = "[one two three four five six](https://x) seven eight nine ten eleven twelve"
    more = "[one two three four five six seven](https://x) eight nine ten eleven twelve"
    assert prose_line(half, SETTINGS) == TWELVE
    assert prose_line(more, SETTINGS) is None


def test_list_items_and_emphasis_become_plain_prose() -> None:
    assert prose_line("- **" + TWELVE + "**", SETTINGS) == TWELVE


def test_short_prose_gets_no_digest_and_says_why() -> None:
    prose = markdown_to_prose("\n".join([TWELVE] * 6), SETTINGS)  # 6 * 62 + 5 = 377 chars
    assert prose.digest is None
    assert prose.no_digest_reason == "prose too short: 377 chars < 400"
    lower = dataclasses.replace(SETTINGS, prose_min_chars=377)
    at_bound = markdown_to_prose("\n".join([TWELVE] * 6), lower)
    assert at_bound.no_digest_reason is None and at_bound.digest is not None


def test_uniform_prose_gets_no_digest() -> None:
    prose = markdown_to_prose("\n".join([" ".join(["aaaa"] * 12)] * 20), SETTINGS)
    assert prose.digest is None
    assert prose.no_digest_reason == "no TLSH digest: prose too uniform"


def test_real_prose_gets_a_tlsh_digest() -> None:
    from conftest import story

    prose = markdown_to_prose("\n\n".join(story("digest")), SETTINGS)
    assert prose.digest is not None and prose.digest.startswith("T1")
    assert len(prose.digest) == 72


def test_settings_version_changes_with_prose_settings_only() -> None:
    base = prose_settings_version(SETTINGS)
    assert prose_settings_version(dataclasses.replace(SETTINGS, tlsh_max_distance=10)) == base
    assert prose_settings_version(dataclasses.replace(SETTINGS, prose_min_words=10)) != base
