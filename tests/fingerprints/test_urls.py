"""URL normalisation: seed 003's four test vectors, tracking parameters, bad input."""

from __future__ import annotations

import pytest

from feedmd import normalize_url, url_hash


@pytest.mark.parametrize(
    ("raw", "expected"),
    [
        (
            "http://www.Example.com/news/story/?utm_source=newsletter&id=7&fbclid=abc#comments",
            "https://example.com/news/story?id=7",
        ),
        (
            "https://example.com/news/story?id=7&utm_medium=email",
            "https://example.com/news/story?id=7",
        ),
        ("https://example.com/news/story/?id=7", "https://example.com/news/story?id=7"),
        ("https://m.example.com/news/story?id=7", "https://m.example.com/news/story?id=7"),
    ],
)
def test_seed_003_vectors(raw: str, expected: str) -> None:
    assert normalize_url(raw) == expected


def test_first_three_seed_vectors_share_one_hash_and_the_mobile_one_does_not() -> None:
    hashes = {
        url_hash("http://www.Example.com/news/story/?utm_source=newsletter&id=7"),
        url_hash("https://example.com/news/story?id=7&utm_medium=email"),
        url_hash("https://example.com/news/story/?id=7"),
    }
    assert len(hashes) == 1
    assert url_hash("https://m.example.com/news/story?id=7") not in hashes
    assert len(hashes.pop()) == 64


@pytest.mark.parametrize(
    ("raw", "expected"),
    [
        ("https://x.com/a?b=2&a=1", "https://x.com/a?a=1&b=2"),
        ("https://x.com/a?id=1&amp;p=2", "https://x.com/a?id=1&p=2"),
        ("https://X.COM:443/a", "https://x.com/a"),
        ("http://x.com:80/a", "https://x.com/a"),
        ("http://x.com:8080/a", "https://x.com:8080/a"),
        ("https://user:pw@x.com/a", "https://x.com/a"),
        ("https://x.com/", "https://x.com"),
        (
            "https://x.com/a?gclid=1&msclkid=2&mc_cid=3&mc_eid=4&igshid=5&yclid=6&_ga=7&ref_src=8"
            "&dclid=9&UTM_Campaign=x",
            "https://x.com/a",
        ),
        (
            "https://www.latimes.com/story,0,1312750.story?track=rss",
            "https://latimes.com/story,0,1312750.story",
        ),
    ],
)
def test_normalisation_rules(raw: str, expected: str) -> None:
    assert normalize_url(raw) == expected


@pytest.mark.parametrize("param", ["id=7", "p=12", "storyid=99", "AID=5", "page=2"])
def test_article_ids_in_the_query_are_kept(param: str) -> None:
    assert normalize_url(f"https://x.com/a?{param}") != normalize_url("https://x.com/a")


@pytest.mark.parametrize(
    "raw",
    [
        "",
        "   ",
        "not a url",
        "ftp://x.com/a",
        "http://",
        "http://[::1",
        "https://x.com/\x00",
        "https://" + "a" * 9000,
        "javascript:alert(1)",
    ],
)
def test_unusable_input_normalises_to_empty_and_never_raises(raw: str) -> None:
    assert normalize_url(raw) == ""
    assert url_hash(raw) == ""


def test_an_item_whose_url_cannot_be_normalised_is_kept_and_says_why() -> None:
    from datetime import UTC, datetime

    from feedmd.models import Entry, WindowSnapshot
    from feedmd.settings import Settings
    from feedmd.stages.stage1 import decide

    when = datetime(2026, 10, 12, 8, tzinfo=UTC)
    entries = [
        Entry(
            feed="f",
            org="o",
            entry_id=str(n),
            link="http://[broken",
            url="http://[broken",
            title=["Harbour council approves ferry budget", "Storm cuts power to homes"][n],
            publisher="p",
            published=when,
            fetched=when,
        )
        for n in range(2)
    ]
    result = decide(entries, WindowSnapshot(), [], Settings(), when)
    decisions = [result.decisions[c.key] for c in result.candidates]
    assert [d.decision for d in decisions] == ["kept", "kept"]
    assert decisions[0].evidence["url_not_compared"] == "URL could not be normalised"
