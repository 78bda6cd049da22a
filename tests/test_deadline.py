"""The run deadline (issue 14): pages that never finish on the loopback site do not hold a
run past ``run_deadline_seconds``; their feeds are left whole for the next run, which reads
them again from the start (nothing failed, fetch state untouched)."""

from __future__ import annotations

import time

from conftest import FeedItemSpec, Site, article_html, at, make_config, rss, story

from feedmd.pipeline import run
from feedmd.store import Store

SLOW = "http://slow.example/never-ends"
QUICK = "http://slow.example/quick"
OTHER = "http://other.example/fine"
FEED_A = "http://feeds.example/a.xml"
FEED_B = "http://feeds.example/b.xml"


def test_pages_past_the_deadline_leave_their_feed_for_the_next_run(
    site: Site, store: Store
) -> None:
    site.put(SLOW, article_html("Reactor inspection finds no faults", story("reactor")))
    site.put(QUICK, article_html("Vineyard harvest starts early", story("vineyard")))
    site.put(OTHER, article_html("Library extends its opening hours", story("library")))
    site.put(
        FEED_A,
        rss(
            [
                FeedItemSpec("Reactor inspection finds no faults", SLOW, at(9)),
                FeedItemSpec("Vineyard harvest starts early this year", QUICK, at(10)),
            ]
        ),
    )
    site.put(FEED_B, rss([FeedItemSpec("Library extends its opening hours", OTHER, at(9))]))
    site.route(SLOW, drip_seconds=30)
    server = site.start()
    config = make_config(
        [("org", "a", FEED_A), ("org", "b", FEED_B)],
        server,
        fetch_timeout_seconds=30.0,
        fetch_retries=0,
        run_deadline_seconds=5.0,
    )

    started = time.monotonic()
    first = run(store, config, now=at(12))
    assert time.monotonic() - started < 25  # not the page's 30 s
    assert first.feeds_deferred == 1 and first.failed == 0 and first.kept == 1
    assert first.status == "ok"
    stored = [row["title_raw"] for row in store._db.query("SELECT title_raw FROM items")]
    assert stored == ["Library extends its opening hours"]  # nothing of feed a, not failed
    (spec,) = store.feed_specs(["a"])
    assert spec.last_fetched_at is None and spec.etag is None  # read again from the start

    server.routes.pop(SLOW)  # the publisher is fast again
    second = run(store, config, now=at(12, 5))
    assert second.feeds == 1 and second.feeds_deferred == 0
    assert second.kept == 2 and second.failed == 0
    decisions = {
        row["title_raw"]: row["decision"]
        for row in store._db.query("SELECT title_raw, decision FROM items")
    }
    assert decisions == {
        "Library extends its opening hours": "kept",
        "Reactor inspection finds no faults": "kept",
        "Vineyard harvest starts early this year": "kept",
    }
