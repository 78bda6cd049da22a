"""The pipeline end to end on a loopback site: canonical choice, window, scope, reuse and
the report's counts. Real httpx, feedparser, trafilatura, py-tlsh and SQLite."""

from __future__ import annotations

from datetime import timedelta

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

from feedmd.fingerprints.headlines import normalize_headline
from feedmd.models import Entry
from feedmd.pipeline import run
from feedmd.store import Store
from feedmd.store.body_candidates import echo_headlines
from feedmd.timeutil import iso

pytestmark = pytest.mark.both_backends

POPE = "Pope Leo to undergo surgery for small growth on his lung"
POPE_COPY = "Pope Leo to undergo surgery for small growth on his lung - Station Six"


def items(store: Store) -> dict[str, dict[str, object]]:
    """Stored items by title (raw), as dicts."""
    rows = store._db.query(
        "SELECT i.*, f.name AS feed FROM items i JOIN feeds f ON f.id = i.feed_id ORDER BY i.id"
    )
    return {f"{row['feed']}|{row['title_raw']}": row for row in rows}


def test_earliest_item_is_canonical_whatever_the_feed_order(site: Site, store: Store) -> None:
    late = site.put("http://six.example/pope", article_html(POPE, story("rome")))
    early = site.put("http://four.example/pope", article_html(POPE, story("vatican")))
    feed = site.put(
        "http://feeds.example/a.xml",
        rss(
            [
                FeedItemSpec(POPE_COPY, late, at(10)),
                FeedItemSpec(POPE, early, at(9)),
            ]
        ),
    )
    server = site.start()
    report = run(store, make_config([("org", "a", feed)], server), now=at(12))
    stored = items(store)
    canonical = stored[f"a|{POPE}"]
    copy = stored[f"a|{POPE_COPY}"]
    assert canonical["decision"] == "kept"
    assert copy["decision"] == "duplicate"
    assert copy["stage"] == "stage1"
    assert copy["rule"] == "jaccard"
    assert copy["matched_item_id"] == canonical["id"]
    assert report.dropped_stage1 == {"jaccard": 1}
    assert report.kept == 1
    # the copy was never scraped: stage 1 dropped it before the scrape
    assert server.count("six.example/pope") == 0
    assert server.count("four.example/pope") == 1


def test_late_original_is_marked_duplicate_of_the_stored_copy(site: Site, store: Store) -> None:
    copy = site.put("http://six.example/pope", article_html(POPE, story("rome")))
    original = site.put("http://wire.example/pope", article_html(POPE, story("wire")))
    site.put("http://feeds.example/a.xml", rss([FeedItemSpec(POPE_COPY, copy, at(9))]))
    site.put("http://feeds.example/b.xml", rss([FeedItemSpec(POPE, original, at(6))]))
    server = site.start()
    config = make_config([("org", "a", "http://feeds.example/a.xml")], server, dedup_scope="org")
    run(store, config, now=at(10))
    config_b = make_config(
        [("org", "a", "http://feeds.example/a.xml"), ("org", "b", "http://feeds.example/b.xml")],
        server,
        dedup_scope="org",
    )
    report = run(store, config_b, now=at(12))
    stored = items(store)
    assert stored[f"a|{POPE_COPY}"]["decision"] == "kept"
    late = stored[f"b|{POPE}"]
    assert late["decision"] == "duplicate"
    assert late["matched_item_id"] == stored[f"a|{POPE_COPY}"]["id"]
    assert report.new == 1 and report.kept == 0
    assert server.count("wire.example/pope") == 0


def _two_runs_same_headline(
    site: Site, store: Store, gap_hours: float, window_hours: float
) -> list[str]:
    first = site.put("http://one.example/story", article_html(POPE, story("one")))
    second = site.put("http://two.example/story", article_html(POPE, story("two")))
    feed = site.put("http://feeds.example/a.xml", rss([FeedItemSpec(POPE, first, at(1))]))
    server = site.start()
    config = make_config(
        [("org", "a", feed)], server, dedup_window_hours=window_hours, history_window_hours=500.0
    )
    run(store, config, now=at(2))
    later = at(1) + timedelta(hours=gap_hours)
    site.put(
        feed,
        rss([FeedItemSpec(POPE, first, at(1)), FeedItemSpec(POPE, second, later, guid="second")]),
    )
    run(store, config, now=later + timedelta(minutes=30))
    return [row["decision"] for row in store._db.query("SELECT decision FROM items ORDER BY id")]


def test_item_outside_the_dedup_window_is_not_compared(site: Site, store: Store) -> None:
    assert _two_runs_same_headline(site, store, gap_hours=49, window_hours=48) == ["kept", "kept"]


def test_item_inside_the_dedup_window_is_compared(site: Site, store: Store) -> None:
    assert _two_runs_same_headline(site, store, gap_hours=47, window_hours=48) == [
        "kept",
        "duplicate",
    ]


def _same_story_in_two_feeds(site: Site) -> tuple[str, str, str]:
    page = site.put("http://one.example/story", article_html(POPE, story("one")))
    a = site.put("http://feeds.example/a.xml", rss([FeedItemSpec(POPE, page, at(8))]))
    b = site.put(
        "http://feeds.example/b.xml", rss([FeedItemSpec(POPE_COPY, page, at(9), guid="b-1")])
    )
    return page, a, b


def test_feed_scope_compares_only_within_a_feed(site: Site, store: Store) -> None:
    _, a, b = _same_story_in_two_feeds(site)
    server = site.start()
    report = run(
        store,
        make_config([("org", "a", a), ("org", "b", b)], server, dedup_scope="feed"),
        now=at(12),
    )
    assert report.kept == 2
    # one org: the page is scraped once and reused by the second feed
    assert server.count("one.example/story") == 1
    assert report.scraped == 1


def test_org_scope_compares_across_feeds(site: Site, store: Store) -> None:
    _, a, b = _same_story_in_two_feeds(site)
    server = site.start()
    report = run(
        store,
        make_config([("org", "a", a), ("org", "b", b)], server, dedup_scope="org"),
        now=at(12),
    )
    stored = items(store)
    assert report.kept == 1
    assert stored[f"b|{POPE_COPY}"]["rule"] == "url"
    assert server.count("one.example/story") == 1


def test_scraped_page_is_reused_within_an_org_but_not_across_orgs(site: Site, store: Store) -> None:
    page, a, b = _same_story_in_two_feeds(site)
    server = site.start()
    run(store, make_config([("org", "a", a)], server), now=at(12))
    assert server.count("one.example/story") == 1
    report = run(store, make_config([("org", "a", a), ("org", "b", b)], server), now=at(13))
    assert report.reused == 1 and report.scraped == 0
    assert server.count("one.example/story") == 1
    other = site.put(
        "http://feeds.example/c.xml", rss([FeedItemSpec(POPE, page, at(9), guid="c-1")])
    )
    report = run(store, make_config([("other", "c", other)], server), now=at(14))
    assert report.scraped == 1
    assert server.count("one.example/story") == 2
    # the other org's request was conditional: a 304 reused the stored copy's Markdown
    bodies = list(store._db.query("SELECT http_status, markdown, digest FROM bodies ORDER BY id"))
    assert [b["http_status"] for b in bodies] == [200, 304]
    assert bodies[0]["markdown"] == bodies[1]["markdown"] and bodies[1]["digest"]


def test_report_counts_every_outcome(site: Site, store: Store) -> None:
    pages = {
        name: site.put(
            f"http://{name}.example/story", article_html(f"{name} headline", story(name))
        )
        for name in ("alpha", "beta", "gamma")
    }
    feed = site.put(
        "http://feeds.example/a.xml",
        rss(
            [
                FeedItemSpec(
                    "Alpha council approves harbour bridge budget plan", pages["alpha"], at(5)
                ),
                FeedItemSpec(
                    "Alpha council approves harbour bridge budget plan - Other",
                    pages["beta"],
                    at(6),
                    guid="x",
                ),
                FeedItemSpec(
                    "Gamma museum festival opens with record crowds downtown", pages["gamma"], at(7)
                ),
                FeedItemSpec(
                    "Delta airport railway link delayed again by strike",
                    "http://gone.example/x",
                    at(8),
                ),
                FeedItemSpec(
                    "Old story from last week about the stadium lease",
                    pages["alpha"] + "?old",
                    at(8) - timedelta(days=5),
                ),
            ]
        ),
    )
    server = site.start()
    report = run(store, make_config([("org", "a", feed)], server), now=at(12))
    assert report.found == 5
    assert report.skipped_old == 1
    assert report.new == 4
    assert report.dropped_stage1 == {"jaccard": 1}
    assert report.scraped == 3
    assert report.kept == 2
    assert report.failed == 1
    assert report.status == "partial"
    assert report.exit_code == 3
    assert set(report.seconds) == {
        "fetch",
        "stage1",
        "scrape",
        "stage2",
        "events",
        "store",
        "deliver",
    }
    second = run(store, make_config([("org", "a", feed)], server), now=at(13))
    assert second.feeds_not_modified == 1
    # the 404 is fetched again: inside its grace period (item_retry_gone_grace_hours)
    assert second.new == 0 and second.retried == 1 and second.scraped == 1
    assert second.status == "ok"


BRIEFING = "Morning briefing: what you need to know today"


def _recurring_title_over_two_runs(site: Site, store: Store, same_body: bool) -> list[tuple]:
    """One publisher's 'Morning briefing' on two days: stored by the first run, its
    recurring title met by the second, which confirms it on the body."""
    bodies = fixture_bodies()
    monday = site.put(
        "http://daily.example/briefing/mon", article_html(BRIEFING, bodies["pope-cp-wire"])
    )
    body = bodies["pope-cp-wire"] if same_body else bodies["decart-wire"]
    tuesday = site.put("http://www.daily.example/briefing/tue", article_html(BRIEFING, body))
    feed = site.put("http://feeds.example/a.xml", rss([FeedItemSpec(BRIEFING, monday, at(1))]))
    server = site.start()
    config = make_config([("org", "a", feed)], server)
    run(store, config, now=at(2))
    site.put(
        feed,
        rss([FeedItemSpec(BRIEFING, monday, at(1)), FeedItemSpec(BRIEFING, tuesday, at(9), "t")]),
    )
    run(store, config, now=at(10))
    assert server.count("daily.example/briefing/tue") == 1  # scraped to confirm
    return store._db.execute("SELECT decision, stage, rule FROM items ORDER BY id").fetchall()


def test_a_recurring_title_with_another_body_is_kept_across_runs(site: Site, store: Store) -> None:
    rows = _recurring_title_over_two_runs(site, store, same_body=False)
    assert rows == [("kept", "stage2", None), ("kept", "stage2", None)]


def test_a_recurring_title_with_the_same_body_is_a_duplicate_across_runs(
    site: Site, store: Store
) -> None:
    rows = _recurring_title_over_two_runs(site, store, same_body=True)
    assert rows[0] == ("kept", "stage2", None)
    assert rows[1][:2] == ("duplicate", "stage2")


SHARED = [  # one page text (a consent platform's notice, say) behind unrelated stories
    ("tax", "paper.example", "Government plans a new fuel tax"),
    ("strike", "news.example", "Rail strike on Monday"),
    ("final", "sport.example", "United win the cup final"),
    ("storm", "weather.example", "Storm warning for the coast"),
]


def test_a_body_under_unrelated_stories_over_runs_is_a_shared_block(
    site: Site, store: Store
) -> None:
    """One new item a run, each on its own host: the second is dropped as a reprint (two
    stories prove nothing), the third is kept as a shared block because the store counts the
    stored reprint's headline, and the fourth because it counts the kept shared block's."""
    body = story("notice", 6)
    specs: list[FeedItemSpec] = []
    feed = "http://feeds.example/a.xml"
    for n, (key, host, title) in enumerate(SHARED):
        url = site.put(f"http://{host}/{key}", article_html(title, body))
        specs.append(FeedItemSpec(title, url, at(1 + n), guid=key))
    site.put(feed, rss(specs[:1]))
    server = site.start()
    config = make_config([("org", "a", feed)], server)
    for n in range(len(SHARED)):
        site.put(feed, rss(specs[: n + 1]))
        run(store, config, now=at(1 + n, 30))
    rows = store._db.execute(
        "SELECT title_raw, decision, rule, matched_item_id FROM items ORDER BY id"
    ).fetchall()
    first_id = store._db.execute("SELECT MIN(id) FROM items").fetchone()[0]
    assert [row[1:] for row in rows] == [
        ("kept", None, None),
        ("duplicate", "tlsh", first_id),
        ("kept", "shared-block", first_id),
        ("kept", "shared-block", first_id),
    ]
    # the window read a run uses and the whole-window reference agree on the body's echoes
    entry = Entry(
        feed="a",
        org="org",
        entry_id="next",
        link="http://late.example/next",
        url="http://late.example/next",
        title="Ferry timetable changes",
        publisher="late.example",
        published=at(6),
        fetched=at(6),
    )
    now = at(6)
    (stored,) = [
        b
        for b in store.full_snapshot([entry], config.settings, now).bodies
        if b.item_id == first_id
    ]
    cutoff = iso(now - timedelta(hours=config.settings.dedup_window_hours))
    echoes = echo_headlines(store._conn, [first_id], cutoff)[first_id]
    assert list(stored.echoes) == echoes.headlines
    assert stored.shared_block and echoes.shared_block
    assert [" ".join(tokens) for tokens in echoes.headlines] == [
        " ".join(normalize_headline(title)) for _, _, title in SHARED[1:]
    ]
