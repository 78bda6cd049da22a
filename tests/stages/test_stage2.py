"""Stage 2 on bodies: TLSH and shingle containment, either may flag a reprint; the
'similar' tier; both scores recorded; stale fingerprints recomputed without a request."""

from __future__ import annotations

import dataclasses

import pytest
from conftest import (
    FeedItemSpec,
    Site,
    article_html,
    at,
    fixture_bodies,
    make_config,
    rss,
    story,
)

from feedmd.fingerprints.shingles import containment, unpack
from feedmd.models import Entry, Page, StoredBody, WindowSnapshot
from feedmd.pipeline import run
from feedmd.settings import Settings
from feedmd.stages import stage2
from feedmd.stages.scrape import fingerprint
from feedmd.stages.stage1 import prepare
from feedmd.store import Store

pytestmark = pytest.mark.both_backends

SETTINGS = Settings()
BODIES = fixture_bodies()
WIRE = BODIES["pope-cp-wire"]


def page_for(key: str, paragraphs: list[str]) -> Page:
    base = Page(
        url_hash=key,
        url=f"https://{key}.example/",
        org="o",
        status="ok",
        markdown="\n\n".join(paragraphs),
    )
    return fingerprint(base, SETTINGS)


def candidate(key: str, minute: int):
    entry = Entry(
        feed="f",
        org="o",
        entry_id=key,
        link=f"https://{key}.example/",
        url=f"https://{key}.example/",
        title=f"title {key}",
        publisher=key,
        published=at(8, minute),
        fetched=at(12),
    )
    return prepare(entry)


def decide(
    pages: dict[str, Page], settings: Settings = SETTINGS, snapshot: WindowSnapshot | None = None
):
    survivors = [candidate(key, n) for n, key in enumerate(pages)]
    by_key = {("o", c.page_key): pages[c.entry.entry_id] for c in survivors}
    decisions = stage2.decide(survivors, by_key, snapshot or WindowSnapshot(), settings, at(12))
    return {c.entry.entry_id: decisions[c.key] for c in survivors}


def test_identical_wire_copy_is_a_tlsh_reprint() -> None:
    result = decide({"wire": page_for("wire", WIRE), "copy": page_for("copy", WIRE)})
    copy = result["copy"]
    assert (copy.decision, copy.rule, copy.score) == ("duplicate", "tlsh", 0.0)
    assert copy.evidence["containment"] == 1.0
    assert copy.matched.batch_key == "f\x1fwire"


def test_trimmed_reprint_with_a_dateline_is_caught_by_shingles_where_tlsh_misses() -> None:
    trimmed = [
        "ROME (Wire) - " + WIRE[0],
        *WIRE[1:4],
        "Copyright 2026 The Wire. All rights "
        "reserved and may not be republished without written permission of the agency.",
    ]
    result = decide({"wire": page_for("wire", WIRE), "copy": page_for("copy", trimmed)})
    copy = result["copy"]
    assert copy.evidence["tlsh_distance"] is None or copy.evidence["tlsh_distance"] > 40
    assert (copy.decision, copy.rule) == ("duplicate", "shingles")
    assert copy.score >= 0.5
    assert copy.evidence["decided_by"] == "shingles"


def test_reprint_containment_threshold_both_sides() -> None:
    half = WIRE[: len(WIRE) // 2] + BODIES["canon-law"]
    pages = {"wire": page_for("wire", WIRE), "half": page_for("half", half)}
    score = containment(unpack(pages["wire"].shingles), unpack(pages["half"].shingles))
    assert round(float(score), 4) == decide(pages)["half"].evidence["containment"]
    at_score = dataclasses.replace(
        SETTINGS, shingle_containment_threshold=float(score), tlsh_max_distance=0
    )
    above = dataclasses.replace(
        SETTINGS,
        shingle_containment_threshold=float(score) + 0.01,
        tlsh_max_distance=0,
        similar_containment=0.0,
    )
    assert decide(pages, at_score)["half"].decision == "duplicate"
    kept = decide(pages, above)["half"]
    assert kept.decision == "kept" and kept.evidence["verdict"] == "similar"
    assert kept.rule == "similar-shingles"
    assert kept.evidence["possible_duplicate_of"] == {"run_key": "f\x1fwire"}


def test_different_stories_are_different() -> None:
    result = decide(
        {"a": page_for("a", BODIES["pope-tribune"]), "b": page_for("b", BODIES["canon-law"])}
    )
    assert result["b"].decision == "kept" and result["b"].evidence["verdict"] == "different"


def test_window_bodies_are_matched_and_the_earliest_wins() -> None:
    wire = page_for("wire", WIRE)
    stored = StoredBody(
        item_id=42, feed="f", org="o", digest=wire.digest, published=at(7), shingles=wire.shingles
    )
    result = decide({"copy": page_for("copy", WIRE)}, snapshot=WindowSnapshot(bodies=(stored,)))
    assert result["copy"].matched.item_id == 42
    assert result["copy"].evidence["where"] == "window"


def test_short_prose_has_no_digest_and_is_kept() -> None:
    result = decide({"a": page_for("a", ["Too short to fingerprint."])})
    assert result["a"].decision == "kept"
    assert result["a"].evidence["no_digest"].startswith("prose too short")


def test_changed_prose_settings_refingerprint_stored_bodies_without_a_request(
    site: Site, store: Store
) -> None:
    page = site.put("http://one.example/story", article_html("One", story("one", 8)))
    feed = site.put(
        "http://feeds.example/a.xml",
        rss([FeedItemSpec("Harbour council approves ferry terminal budget", page, at(8))]),
    )
    server = site.start()
    run(store, make_config([("o", "a", feed)], server), now=at(9))
    before = next(store._db.query("SELECT digest, settings_version FROM bodies"))
    assert server.count("one.example/story") == 1
    copy = site.put("http://two.example/story", article_html("Two", story("one", 8)))
    site.put(
        feed,
        rss(
            [
                FeedItemSpec("Harbour council approves ferry terminal budget", page, at(8)),
                FeedItemSpec("Ferry plan wins approval after long debate", copy, at(10)),
            ]
        ),
    )
    report = run(store, make_config([("o", "a", feed)], server, prose_min_words=10), now=at(11))
    after = next(store._db.query("SELECT digest, settings_version FROM bodies WHERE id = 1"))
    assert after["settings_version"] != before["settings_version"]
    assert server.count("one.example/story") == 1
    assert report.dropped_stage2 == {"tlsh": 1}


DISCLAIMER = (
    "This article is provided for general information only and does not constitute "
    "financial, legal or investment advice of any kind whatsoever."
)


def _host_pages(site: Site, names: list[str]) -> list[tuple[str, str]]:
    bodies = fixture_bodies()
    out = []
    for name in names:
        url = site.put(
            f"http://news.example/{name}", article_html(name, [*bodies[name][:4], DISCLAIMER])
        )
        out.append((name, url))
    return out


def _disclaimer_in_prose(store: Store) -> list[bool]:
    return [
        DISCLAIMER in row["prose"]
        for row in store._db.query("SELECT prose FROM bodies ORDER BY id")
    ]


def test_a_line_on_three_pages_of_a_host_is_furniture(site: Site, store: Store) -> None:
    pages = _host_pages(site, ["pope-tribune", "canon-law", "pope-pilgrim"])
    feed = site.put(
        "http://feeds.example/a.xml",
        rss(
            [
                FeedItemSpec(f"Story number {n} about {name} and more", url, at(8, n))
                for n, (name, url) in enumerate(pages)
            ]
        ),
    )
    server = site.start()
    run(store, make_config([("o", "a", feed)], server), now=at(12))
    assert _disclaimer_in_prose(store) == [False, False, False]
    assert next(store._db.query("SELECT COUNT(*) AS n FROM body_lines"))["n"] > 0


def test_two_pages_are_not_enough_and_stored_pages_count(site: Site, store: Store) -> None:
    pages = _host_pages(site, ["pope-tribune", "canon-law", "pope-pilgrim"])
    feed = site.put(
        "http://feeds.example/a.xml",
        rss(
            [
                FeedItemSpec(f"Story number {n} about {name} and more", url, at(8, n))
                for n, (name, url) in enumerate(pages[:2])
            ]
        ),
    )
    server = site.start()
    config = make_config([("o", "a", feed)], server)
    run(store, config, now=at(12))
    assert _disclaimer_in_prose(store) == [True, True]
    site.put(
        feed,
        rss(
            [
                FeedItemSpec(f"Story number {n} about {name} and more", url, at(8, n))
                for n, (name, url) in enumerate(pages)
            ]
        ),
    )
    run(store, config, now=at(13))
    assert _disclaimer_in_prose(store) == [True, True, False]
