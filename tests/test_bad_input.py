"""Bad input: the run goes on, the failure is recorded and counted, the exit code says
partial failure, and nothing already stored is lost."""

from __future__ import annotations

import socket
from pathlib import Path

import pytest
from click.testing import CliRunner
from conftest import FeedItemSpec, Site, article_html, at, make_config, rss, story

from feedmd.cli.main import main
from feedmd.pipeline import run
from feedmd.store import Store

pytestmark = pytest.mark.both_backends

GOOD_TITLE = "Harbour council approves new ferry terminal budget"


def good_feed(site: Site) -> str:
    page = site.put("http://good.example/ferry", article_html(GOOD_TITLE, story("ferry")))
    return site.put("http://feeds.example/good.xml", rss([FeedItemSpec(GOOD_TITLE, page, at(8))]))


def feed_row(store: Store, name: str) -> dict[str, object]:
    return next(store._db.query("SELECT * FROM feeds WHERE name = ?", [name]))


def item_rows(store: Store) -> list[dict[str, object]]:
    return list(store._db.query("SELECT * FROM items ORDER BY id"))


def test_malformed_feed_is_recorded_and_other_feeds_go_on(site: Site, store: Store) -> None:
    good = good_feed(site)
    bad = site.put("http://feeds.example/bad.xml", "<rss><channel><item><title>broken")
    server = site.start()
    report = run(store, make_config([("o", "good", good), ("o", "bad", bad)], server), now=at(12))
    assert report.kept == 1
    assert report.feeds_failed == 1
    assert report.status == "partial" and report.exit_code == 3
    assert "malformed feed" in report.feed_errors["bad"]
    row = feed_row(store, "bad")
    assert row["last_status"] == "error"
    assert "malformed feed" in str(row["last_error"])


def test_html_instead_of_a_feed_is_an_error(site: Site, store: Store) -> None:
    bad = site.put("http://feeds.example/page.xml", b"")
    server = site.start()
    report = run(store, make_config([("o", "page", bad)], server), now=at(12))
    assert report.feeds_failed == 1
    assert report.feed_errors["page"]


def test_unreachable_feed_is_recorded(store: Store) -> None:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    # the socket is closed again: nothing listens on that port
    config = make_config([("o", "down", f"http://127.0.0.1:{port}/feed.xml")])
    report = run(store, config, now=at(12))
    assert report.feeds_failed == 1
    assert "fetch failed: ConnectError" in report.feed_errors["down"]
    assert feed_row(store, "down")["last_status"] == "error"


def test_feed_http_error_is_recorded(site: Site, store: Store) -> None:
    server = site.start()
    report = run(
        store, make_config([("o", "gone", "http://feeds.example/missing.xml")], server), now=at(12)
    )
    assert report.feed_errors == {"gone": "HTTP 404"}


def test_404_and_timeout_pages_fail_their_items_only(site: Site, store: Store) -> None:
    good = site.put("http://good.example/ferry", article_html(GOOD_TITLE, story("ferry")))
    site.route("http://slow.example/story", delay_seconds=3)
    feed = site.put(
        "http://feeds.example/a.xml",
        rss(
            [
                FeedItemSpec(GOOD_TITLE, good, at(8)),
                FeedItemSpec(
                    "Stadium lease talks collapse after late night session",
                    "http://missing.example/story",
                    at(9),
                ),
                FeedItemSpec(
                    "Orchard growers warn of smallest apple harvest in decades",
                    "http://slow.example/story",
                    at(10),
                ),
            ]
        ),
    )
    server = site.start()
    report = run(
        store, make_config([("o", "a", feed)], server, fetch_timeout_seconds=1.0), now=at(12)
    )
    assert report.kept == 1 and report.failed == 2
    rows = {row["title_raw"]: row for row in item_rows(store)}
    missing = rows["Stadium lease talks collapse after late night session"]
    slow = rows["Orchard growers warn of smallest apple harvest in decades"]
    assert (missing["decision"], missing["stage"]) == ("failed", "scrape")
    assert missing["error"] == "scrape failed: HTTP 404"
    assert slow["decision"] == "failed"
    assert "timed out after 1 s" in str(slow["error"])


def test_duplicate_entry_ids_in_one_feed_keep_the_earliest_listing(
    site: Site, store: Store
) -> None:
    page = site.put("http://good.example/ferry", article_html(GOOD_TITLE, story("ferry")))
    feed = site.put(
        "http://feeds.example/a.xml",
        rss(
            [
                FeedItemSpec(
                    "Edited title listed first but published later", page, at(9), guid="same"
                ),
                FeedItemSpec(GOOD_TITLE, page, at(8), guid="same"),
                FeedItemSpec(
                    "A third listing of the same id, later still", page, at(10), guid="same"
                ),
            ]
        ),
    )
    server = site.start()
    report = run(store, make_config([("o", "a", feed)], server), now=at(12))
    assert report.found == 3
    assert report.repeated_in_feed == 2
    assert report.new == 1
    assert [row["title_raw"] for row in item_rows(store)] == [GOOD_TITLE]


def test_non_utf8_page_and_feed_are_decoded(site: Site, store: Store) -> None:
    paragraphs = [p.replace("officials", "café officials") for p in story("latin")]
    html = article_html("Café owners protest new tariff", paragraphs).replace(
        'charset="utf-8"', 'charset="windows-1252"'
    )
    page = site.put("http://latin.example/cafe", html.encode("windows-1252"))
    feed_xml = rss(
        [FeedItemSpec("Café owners protest new tariff on imported beans", page, at(8))]
    ).replace('encoding="UTF-8"', 'encoding="ISO-8859-1"')
    feed = site.put("http://feeds.example/latin.xml", feed_xml.encode("iso-8859-1"))
    server = site.start()
    report = run(store, make_config([("o", "latin", feed)], server), now=at(12))
    assert report.kept == 1 and report.failed == 0
    row = next(
        store._db.query(
            "SELECT i.title_raw, b.markdown FROM items i JOIN bodies b ON b.id = i.body_id"
        )
    )
    assert row["title_raw"] == "Café owners protest new tariff on imported beans"
    assert "café officials" in row["markdown"]


def test_oversized_page_is_abandoned(site: Site, store: Store) -> None:
    page = site.put("http://big.example/story", article_html(GOOD_TITLE, story("big", 400)))
    feed = site.put("http://feeds.example/a.xml", rss([FeedItemSpec(GOOD_TITLE, page, at(8))]))
    server = site.start()
    report = run(
        store, make_config([("o", "a", feed)], server, max_response_bytes=20_000), now=at(12)
    )
    assert report.failed == 1
    assert "over the limit of 20000 bytes" in item_rows(store)[0]["error"]


def test_non_html_page_is_recorded_not_parsed(site: Site, store: Store) -> None:
    page = site.put("http://docs.example/report.pdf", b"%PDF-1.7 binary")
    feed = site.put("http://feeds.example/a.xml", rss([FeedItemSpec(GOOD_TITLE, page, at(8))]))
    server = site.start()
    report = run(store, make_config([("o", "a", feed)], server), now=at(12))
    assert report.kept == 1 and report.no_digest == 1
    body = next(store._db.query("SELECT * FROM bodies"))
    assert body["no_digest_reason"] == "not HTML: application/pdf"
    assert body["markdown"] == ""


def test_a_failing_run_loses_nothing_already_stored(site: Site, store: Store) -> None:
    good = good_feed(site)
    server = site.start()
    config = make_config([("o", "good", good)], server)
    run(store, config, now=at(12))
    before = item_rows(store)
    site.put(good, "<rss><channel><item><title>now broken")
    report = run(store, config, now=at(13), force=True)
    assert report.feeds_failed == 1
    assert item_rows(store) == before


def test_cli_run_exits_3_on_partial_failure(site: Site, tmp_path: Path) -> None:
    good = good_feed(site)
    server = site.start()
    config = tmp_path / "feedmd.toml"
    config.write_text(f"""
database = "{tmp_path / "cli.db"}"
[[orgs]]
name = "o"
[[orgs.feeds]]
name = "good"
url = "{good}"
[[orgs.feeds]]
name = "missing"
url = "http://feeds.example/missing.xml"
""")
    result = CliRunner().invoke(
        main,
        [
            "run",
            "--config",
            str(config),
            "--allow-private-addresses",
            "--proxy",
            server.proxy_url,
            "--now",
            "2026-10-12T12:00:00Z",
        ],
    )
    assert result.exit_code == 3, result.output
    assert "feed error   missing: HTTP 404" in result.output
    result = CliRunner().invoke(
        main,
        [
            "run",
            "--config",
            str(config),
            "--allow-private-addresses",
            "--proxy",
            server.proxy_url,
            "--now",
            "2026-10-12T13:00:00Z",
            "--json",
        ],
    )
    assert result.exit_code == 3
    assert '"feeds_not_modified": 1' in result.output


def test_bad_config_stops_before_any_work(tmp_path: Path) -> None:
    config = tmp_path / "feedmd.toml"
    config.write_text(f'database = "{tmp_path / "never.db"}"\ntlsh_max_distance = "far"\n')
    result = CliRunner().invoke(main, ["run", "--config", str(config)])
    assert result.exit_code == 1
    assert f"Error: {config}: setting 'tlsh_max_distance' must be int" in result.output
    assert not (tmp_path / "never.db").exists()


def test_bad_flag_value_names_the_flag(tmp_path: Path) -> None:
    result = CliRunner().invoke(main, ["settings", "--set", "jaccard_threshold=2"])
    assert result.exit_code == 2
    assert "--set jaccard_threshold: setting 'jaccard_threshold' must be <= 1" in result.output
    flag = CliRunner().invoke(main, ["compare", "a", "b", "--similar-containment", "2"])
    assert flag.exit_code == 1
    assert "flag --similar-containment: setting 'similar_containment' must be <= 1" in flag.output


def _one_page_feed(site: Site, url: str) -> str:
    site.put(url, article_html(GOOD_TITLE, story("ferry")))
    return site.put("http://feeds.example/a.xml", rss([FeedItemSpec(GOOD_TITLE, url, at(8))]))


def test_5xx_is_retried_with_backoff_until_it_works(site: Site, store: Store) -> None:
    url = "http://flaky.example/story"
    site.route(url, status=503, fail_times=2, retry_after=0)
    feed = _one_page_feed(site, url)
    server = site.start()
    config = make_config([("o", "a", feed)], server, retry_backoff_seconds=0.01)
    report = run(store, config, now=at(12))
    assert report.kept == 1 and report.failed == 0
    assert server.count(url) == 3


def test_retries_are_bounded(site: Site, store: Store) -> None:
    url = "http://down.example/story"
    site.route(url, status=503, fail_times=10)
    feed = _one_page_feed(site, url)
    server = site.start()
    config = make_config([("o", "a", feed)], server, retry_backoff_seconds=0.01, fetch_retries=2)
    report = run(store, config, now=at(12))
    assert report.failed == 1
    assert item_rows(store)[0]["error"] == "scrape failed: HTTP 503"
    assert server.count(url) == 3


def test_a_retry_after_longer_than_allowed_is_not_waited_for(site: Site, store: Store) -> None:
    url = "http://busy.example/story"
    site.route(url, status=429, fail_times=1, retry_after=120)
    feed = _one_page_feed(site, url)
    server = site.start()
    config = make_config([("o", "a", feed)], server, max_retry_wait_seconds=5.0)
    report = run(store, config, now=at(12))
    assert report.failed == 1
    assert item_rows(store)[0]["error"] == "scrape failed: HTTP 429"
    assert server.count(url) == 1


def test_retry_after_is_honoured(site: Site, store: Store) -> None:
    import time

    url = "http://limited.example/story"
    site.route(url, status=429, fail_times=1, retry_after=1)
    feed = _one_page_feed(site, url)
    server = site.start()
    config = make_config([("o", "a", feed)], server, retry_backoff_seconds=0.01)
    started = time.monotonic()
    report = run(store, config, now=at(12))
    assert report.kept == 1
    assert server.count(url) == 2
    assert time.monotonic() - started >= 1.0


def _page_outcome(
    site: Site, store: Store, url: str, content: bytes | None, **route: object
) -> dict[str, object]:
    if content is not None:
        site.put(url, content)
    if route:
        site.route(url, **route)
    feed = site.put("http://feeds.example/a.xml", rss([FeedItemSpec(GOOD_TITLE, url, at(8))]))
    server = site.start()
    report = run(
        store, make_config([("o", "a", feed)], server, fetch_timeout_seconds=1.0), now=at(12)
    )
    assert report.status in ("ok", "partial")
    return next(
        store._db.query(
            "SELECT i.decision, i.error, b.no_digest_reason, b.digest FROM items i"
            " LEFT JOIN bodies b ON b.id = i.body_id"
        )
    )


def test_empty_page_is_recorded(site: Site, store: Store) -> None:
    row = _page_outcome(site, store, "http://x.example/empty", b"")
    assert (row["decision"], row["no_digest_reason"]) == ("kept", "empty page")


def test_binary_page_is_recorded(site: Site, store: Store) -> None:
    import random

    noise = bytes(random.Random(7).randrange(256) for _ in range(50_000))
    row = _page_outcome(site, store, "http://x.example/binary", noise)
    assert row["decision"] == "kept" and row["digest"] is None
    assert row["no_digest_reason"].startswith("prose too short")


def test_a_page_that_is_all_script_has_no_prose(site: Site, store: Store) -> None:
    script = "<script>" + "var x = 'lorem ipsum dolor sit amet consectetur';" * 2000 + "</script>"
    html = f"<html><head>{script}</head><body>{script}</body></html>".encode()
    row = _page_outcome(site, store, "http://x.example/script", html)
    assert row["decision"] == "kept" and row["digest"] is None
    assert row["no_digest_reason"].startswith("prose too short")


def test_misdeclared_encoding_still_gives_a_fingerprint(site: Site, store: Store) -> None:
    html = article_html(
        "Café owners protest", [p.replace("officials", "café officials") for p in story("latin")]
    )
    row = _page_outcome(
        site,
        store,
        "http://x.example/latin",
        html.encode("windows-1252"),
        content_type="text/html; charset=utf-8",
    )
    assert row["decision"] == "kept" and row["digest"] is not None


def test_a_page_that_never_finishes_times_out(site: Site, store: Store) -> None:
    row = _page_outcome(site, store, "http://x.example/drip", None, drip_seconds=5)
    assert row["decision"] == "failed"
    assert "timed out after 1 s" in str(row["error"])
