"""Retries of failed pages (issue 14): the pure policy, then real runs on the loopback site
whose pages fail and come back, real SQLite, and ``feedmd retry``."""

from __future__ import annotations

import json
from datetime import timedelta
from pathlib import Path

import pytest
from click.testing import CliRunner
from conftest import FeedItemSpec, Site, article_html, at, make_config, rss, story

from feedmd.cli.main import main
from feedmd.pipeline import run
from feedmd.settings import Settings
from feedmd.stages import retry
from feedmd.store import Store
from feedmd.tools.explain import explain, render

pytestmark = pytest.mark.both_backends

SETTINGS = Settings()
PAGE = "http://pub.example/story"
OTHER = "http://pub.example/other"
FEED = "http://feeds.example/a.xml"


def item_by_url(store: Store, url: str) -> dict[str, object]:
    rows = list(store._db.query("SELECT * FROM items WHERE url_raw = ?", [url]))
    assert len(rows) == 1, rows
    return rows[0]


def one_feed_site(site: Site, **route: object) -> None:
    """A feed of two stories; the first one's page answers as ``route`` says."""
    site.put(PAGE, article_html("Harbour bridge to close for repairs", story("harbour")))
    site.put(OTHER, article_html("Museum opens a new wing downtown", story("museum")))
    site.put(
        FEED,
        rss(
            [
                FeedItemSpec("Harbour bridge to close for repairs", PAGE, at(9)),
                FeedItemSpec("Museum opens a new wing downtown", OTHER, at(10)),
            ]
        ),
    )
    if route:
        site.route(PAGE, **route)


def config(server: object, **settings: object):  # type: ignore[no-untyped-def]
    return make_config([("org", "a", FEED)], server, fetch_retries=0, **settings)  # type: ignore[arg-type]


# ---- the policy ---------------------------------------------------------------------------


def test_failures_are_classified_by_status_and_error() -> None:
    assert retry.classify(503, "scrape failed: HTTP 503") == "transient"
    assert retry.classify(429, None) == "transient"
    assert retry.classify(408, None) == "transient"
    assert retry.classify(404, None) == "gone"
    assert retry.classify(410, None) == "gone"
    assert retry.classify(403, None) == "permanent"
    assert retry.classify(None, "scrape failed: timed out after 5 s") == "transient"
    assert retry.classify(None, "scrape failed: ConnectError: [Errno 111]") == "transient"
    assert retry.classify(None, "scrape failed: RemoteProtocolError: peer closed") == "transient"
    assert retry.classify(None, "scrape failed: more than 5 redirects") == "permanent"
    assert retry.classify(None, "extraction failed: ValueError: bad") == "permanent"
    assert retry.classify(None, "refused to connect to 10.0.0.1 (private)") == "permanent"


def test_backoff_doubles_up_to_its_cap_and_stops_at_the_window() -> None:
    base, cap = timedelta(minutes=10), timedelta(hours=6)
    assert [retry.backoff(n, base, cap) for n in (1, 2, 3)] == [
        timedelta(minutes=10),
        timedelta(minutes=20),
        timedelta(minutes=40),
    ]
    assert retry.backoff(12, base, cap) == cap
    now = at(12)
    ends = now + timedelta(hours=48)
    verdict = retry.decide(503, None, 1, now, ends, now, SETTINGS)
    assert verdict.retry_at == at(12, 10) and verdict.gave_up is None
    late = retry.decide(503, None, 9, now, now + timedelta(hours=1), now, SETTINGS)
    assert late.retry_at is None and "dedup window" in (late.gave_up or "")
    permanent = retry.decide(403, None, 1, now, ends, now, SETTINGS)
    assert permanent.retry_at is None and "permanent" in (permanent.gave_up or "")


def test_a_404_is_retried_only_within_its_grace_period() -> None:
    seen = at(12)
    ends = seen + timedelta(hours=48)
    first = retry.decide(404, None, 1, seen, ends, seen, SETTINGS)
    assert first.retry_at == at(12, 10)
    # the backoff would pass the grace period's end: one last try at its end
    fifth = retry.decide(404, None, 5, seen, ends, at(13, 50), SETTINGS)
    assert fifth.retry_at == at(14)
    after = retry.decide(404, None, 6, seen, ends, at(14), SETTINGS)
    assert after.retry_at is None and "grace period" in (after.gave_up or "")


def test_a_feed_is_due_again_sooner_than_its_poll_interval() -> None:
    settings = Settings(feed_retry_base_minutes=2)
    assert retry.feed_due_after_error(1, 60, settings) == timedelta(minutes=2)
    assert retry.feed_due_after_error(3, 60, settings) == timedelta(minutes=8)
    assert retry.feed_due_after_error(10, 60, settings) == timedelta(minutes=60)


# ---- runs ---------------------------------------------------------------------------------


def test_a_page_that_comes_back_is_recovered_and_delivered(
    site: Site, store: Store, tmp_path: Path
) -> None:
    one_feed_site(site, status=503, fail_times=1)
    server = site.start()
    first = run(store, config(server), now=at(12))
    failed = item_by_url(store, PAGE)
    assert failed["decision"] == "failed" and first.failed == 1
    state = store.retry_state(int(failed["id"]))  # type: ignore[arg-type]
    assert state is not None
    assert state["attempts"] == 1 and state["next_attempt_at"] == "2026-10-12T12:10:00Z"

    # not due yet: nothing fetched again, and the entry is "seen before" as it was
    early = run(store, config(server), now=at(12, 5), force=True)
    assert early.retried == 0 and server.count("pub.example/story") == 1

    out = str(tmp_path / "out")
    later = run(store, config(server), now=at(12, 20), force=True, output_dir=out)
    assert (later.retried, later.recovered, later.given_up) == (1, 1, 0)
    assert server.count("pub.example/story") == 2
    recovered = item_by_url(store, PAGE)
    assert recovered["id"] == failed["id"]  # the same decision row, updated
    assert recovered["decision"] == "kept" and recovered["stage"] == "stage2"
    assert recovered["error"] is None and recovered["body_id"] is not None
    assert recovered["run_id"] == later.run_id
    assert "1 recovered" in later.render()
    # delivered like any newly kept item: in the feed's files, once
    assert later.delivered == 1
    assert "Harbour bridge" in next(Path(out).rglob("*.json")).read_text()
    state = store.retry_state(int(failed["id"]))  # type: ignore[arg-type]
    assert state is not None and state["recovered_at"] == "2026-10-12T12:20:00Z"
    assert [a["outcome"] for a in state["history"]] == ["failed", "recovered"]
    # explain shows the attempts with the decision
    trail = explain(store, int(failed["id"]))  # type: ignore[arg-type]
    assert trail is not None and "retries" in trail.item["evidence"]
    assert "recovered" in render(trail)
    # and a later run does not fetch it again
    run(store, config(server), now=at(13), force=True)
    assert server.count("pub.example/story") == 2


def test_a_recovered_page_is_decided_against_the_window(site: Site, store: Store) -> None:
    """The original failed, its copy in another feed was kept meanwhile (scrape.settle):
    when the original's page comes, stage 2 finds it a reprint of the kept copy."""
    body = story("harbour")
    copy = "http://copy.example/story"
    site.put(PAGE, article_html("Harbour bridge to close for repairs", body))
    site.put(copy, article_html("Harbour bridge to close for repairs", body))
    site.put(FEED, rss([FeedItemSpec("Harbour bridge to close for repairs", PAGE, at(9))]))
    feed_b = site.put(
        "http://feeds.example/b.xml",
        rss([FeedItemSpec("Harbour bridge to close for repairs", copy, at(10))]),
    )
    site.route(PAGE, status=500, fail_times=1)
    server = site.start()
    settings = {"fetch_retries": 0, "dedup_scope": "org"}
    cfg = make_config([("org", "a", FEED), ("org", "b", feed_b)], server, **settings)
    run(store, cfg, now=at(12))
    assert item_by_url(store, PAGE)["decision"] == "failed"
    kept_copy = item_by_url(store, copy)
    assert kept_copy["decision"] == "kept"

    report = run(store, cfg, now=at(12, 30))
    original = item_by_url(store, PAGE)
    assert report.recovered == 1
    assert original["decision"] == "duplicate" and original["stage"] == "stage2"
    assert original["matched_item_id"] == kept_copy["id"]


def test_a_permanent_failure_is_given_up_until_feedmd_retry(
    site: Site, store: Store, tmp_path: Path
) -> None:
    one_feed_site(site, status=403, fail_times=1)
    server = site.start()
    report = run(store, config(server), now=at(12))
    failed = item_by_url(store, PAGE)
    assert report.given_up == 1
    state = store.retry_state(int(failed["id"]))  # type: ignore[arg-type]
    assert state is not None and state["next_attempt_at"] is None
    assert "permanent failure (HTTP 403)" in state["given_up"]
    run(store, config(server), now=at(15), force=True)
    assert server.count("pub.example/story") == 1

    db = store.path
    result = CliRunner().invoke(main, ["retry", "--item", str(failed["id"]), "--db", db])
    assert result.exit_code == 0, result.output
    assert "1 failed item(s) due now" in result.output
    again = run(store, config(server), now=at(15, 5), force=True)
    assert again.recovered == 1 and item_by_url(store, PAGE)["decision"] == "kept"

    wrong = CliRunner().invoke(main, ["retry", "--item", str(failed["id"]), "--db", db])
    assert wrong.exit_code != 0 and "not a failed item" in wrong.output
    neither = CliRunner().invoke(main, ["retry", "--db", db])
    assert neither.exit_code != 0


def test_a_404_past_its_grace_period_is_given_up(site: Site, store: Store) -> None:
    one_feed_site(site, status=404)
    server = site.start()
    run(store, config(server), now=at(12))
    item_id = int(item_by_url(store, PAGE)["id"])  # type: ignore[arg-type]
    during = run(store, config(server), now=at(12, 15), force=True)
    assert during.retried == 1 and during.given_up == 0
    after = run(store, config(server), now=at(14, 30), force=True)
    assert after.retried == 1 and after.given_up == 1
    state = store.retry_state(item_id)
    assert state is not None and state["attempts"] == 3
    assert "grace period" in state["given_up"]
    assert item_by_url(store, PAGE)["decision"] == "failed"


def test_retries_stop_when_the_item_leaves_its_window(site: Site, store: Store) -> None:
    one_feed_site(site, status=503)
    server = site.start()
    cfg = config(server, dedup_window_hours=4)
    run(store, cfg, now=at(12))
    item_id = int(item_by_url(store, PAGE)["id"])  # type: ignore[arg-type]
    # published at 9:00 with a 4 h window: at 13:30 it has left it, nothing is fetched
    report = run(store, cfg, now=at(13, 30), force=True)
    assert report.retried == 0 and report.given_up == 1
    assert server.count("pub.example/story") == 1
    state = store.retry_state(item_id)
    assert state is not None and state["given_up"] == "left its dedup window"


def test_retries_per_run_are_bounded(site: Site, store: Store) -> None:
    urls = [f"http://pub.example/s{n}" for n in range(3)]
    for n, url in enumerate(urls):
        site.put(url, article_html(f"Story number {n} about the river", story(f"s{n}")))
        site.route(url, status=503, fail_times=1)
    site.put(
        FEED,
        rss(
            [
                FeedItemSpec(f"Distinct headline {n} of the day", u, at(9, n))
                for n, u in enumerate(urls)
            ]
        ),
    )
    server = site.start()
    cfg = config(server, item_retries_per_run=2)
    assert run(store, cfg, now=at(12)).failed == 3
    second = run(store, cfg, now=at(12, 30), force=True)
    assert (second.retried, second.recovered) == (2, 2)
    third = run(store, cfg, now=at(12, 45), force=True)
    assert (third.retried, third.recovered) == (1, 1)


# ---- feeds --------------------------------------------------------------------------------


def test_a_failed_feed_is_retried_sooner_than_its_poll_interval(
    site: Site, store: Store, tmp_path: Path
) -> None:
    one_feed_site(site)
    site.route(FEED, status=503, fail_times=2)
    server = site.start()
    first = run(store, config(server), now=at(12))
    assert first.feeds_failed == 1
    (spec,) = store.feed_specs(["a"])
    assert spec.error_streak == 1 and spec.next_due_at == at(12, 2)

    early = run(store, config(server), now=at(12, 1))
    assert early.feeds == 0 and early.feeds_not_due == {"a": "2026-10-12T12:02:00Z"}
    assert "not due      1: a (due 2026-10-12T12:02:00Z)" in early.render()

    second = run(store, config(server), now=at(12, 2))
    assert second.feeds_failed == 1
    (spec,) = store.feed_specs(["a"])
    assert spec.error_streak == 2 and spec.next_due_at == at(12, 6)  # the backoff doubles
    assert run(store, config(server), now=at(12, 5)).feeds == 0

    db = store.path
    listed = CliRunner().invoke(main, ["feeds", "list", "--db", db])
    assert listed.exit_code == 0, listed.output
    assert "a\torg\terror (HTTP 503)\t" in listed.output
    assert "error streak 2; last error:" in listed.output
    shown = CliRunner().invoke(main, ["feeds", "list", "--db", db, "--json"])
    (row,) = json.loads(shown.output)
    assert (row["error_streak"], row["next_due"]) == (2, "2026-10-12T12:06:00Z")

    third = run(store, config(server), now=at(12, 6))
    assert third.feeds == 1 and third.feeds_failed == 0 and third.kept == 2
    (spec,) = store.feed_specs(["a"])
    assert spec.error_streak == 0 and spec.next_due_at is None
    # back to its poll interval
    assert run(store, config(server), now=at(12, 10)).feeds_not_due == {"a": "2026-10-12T12:21:00Z"}
    listed = CliRunner().invoke(main, ["feeds", "list", "--db", db, "--json"])
    assert '"error_streak": 0' in listed.output
