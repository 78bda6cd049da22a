"""`feedmd serve`: routing, tokens and conditional requests against a real uvicorn server
on a free loopback port, and the scheduler driven by a clock the test moves.

(Starlette's TestClient is not used: from Starlette 1.x it wants the separate httpx2
package, and a real server on 127.0.0.1 is the house rule anyway.)"""

from __future__ import annotations

import contextlib
import dataclasses
import json
import logging
import re
import socket
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from datetime import datetime, timedelta
from pathlib import Path
from typing import Any

import feedparser
import httpx
import jsonschema
import pytest
from click.testing import CliRunner
from conftest import (
    REPO,
    FeedItemSpec,
    Site,
    article_html,
    at,
    make_config,
    rss,
    store_dump,
    story,
)
from loopback import serving

from feedmd.cli.delivery import tokens_group
from feedmd.pipeline import run
from feedmd.service.scheduler import Scheduler, pipeline_scheduler
from feedmd.service.server import create_app
from feedmd.settings.config import FeedConfig
from feedmd.store import Store
from feedmd.timeutil import utcnow

pytestmark = pytest.mark.both_backends

SCHEMA = json.loads((REPO / "tests" / "jsonfeed_schema.json").read_text())


def populate(site: Site, store: Store) -> str:
    """Feed 'a' of org 'pub' (public, two items) and feed 'b' of org 'priv' (private, one
    item); returns a token of 'priv'."""
    pope = site.put("http://four.example/pope", article_html("Pope", story("vatican")))
    ferry = site.put("http://other.example/ferry", article_html("Ferry", story("ferry")))
    mine = site.put("http://mine.example/strike", article_html("Strike", story("strike")))
    a = site.put(
        "http://feeds.example/a.xml",
        rss(
            [
                FeedItemSpec("Pope Leo to undergo surgery for small growth", pope, at(9)),
                FeedItemSpec("Harbour council approves new ferry terminal budget", ferry, at(11)),
            ]
        ),
    )
    b = site.put(
        "http://feeds.example/b.xml",
        rss([FeedItemSpec("Miners walk out over pay at the northern pits", mine, at(10))]),
    )
    config = make_config([("pub", "a", a), ("priv", "b", b)], site.start())
    run(store, config, now=at(12))
    store.set_public({"a": True, "b": False})
    token = store.create_token("priv", "test", utcnow())
    assert token is not None
    return token


@pytest.fixture
def client(site: Site, store: Store, tmp_path: Path) -> Iterator[tuple[httpx.Client, str]]:
    token = populate(site, store)
    with serving(create_app(store.path, page_size=1)) as http:
        yield http, token


def test_health_landing_and_feed_list(client: tuple[httpx.Client, str]) -> None:
    http, token = client
    assert http.get("/health").json() == {"status": "ok", "feeds": 2}
    landing = http.get("/")
    assert landing.status_code == 200 and f"{http.base_url}/feeds/a.json" in landing.text
    assert "/feeds/b.json" not in landing.text
    public = http.get("/feeds").json()
    assert public == [
        {
            "name": "a",
            "title": "",
            "org": "pub",
            "public": True,
            "json_url": f"{http.base_url}/feeds/a.json",
            "atom_url": f"{http.base_url}/feeds/a.atom",
        }
    ]
    both = http.get("/feeds", headers={"Authorization": f"Bearer {token}"}).json()
    assert [feed["name"] for feed in both] == ["a", "b"]


def test_feeds_are_gzipped_for_clients_that_ask(client: tuple[httpx.Client, str]) -> None:
    http, _ = client
    for path in ("/feeds/a.json", "/feeds/a.atom", "/"):
        response = http.get(path, headers={"Accept-Encoding": "gzip"})
        assert response.status_code == 200
        assert response.headers.get("content-encoding") == "gzip", path
        assert response.content  # httpx decoded it
    plain = http.get("/feeds/a.json", headers={"Accept-Encoding": "identity"})
    assert "content-encoding" not in plain.headers
    assert plain.json()["home_page_url"] == "http://feeds.example/"
    # a revalidation still answers 304 with the same validator
    etag = plain.headers["etag"]
    again = http.get("/feeds/a.json", headers={"If-None-Match": etag, "Accept-Encoding": "gzip"})
    assert again.status_code == 304


def test_feeds_are_paged_json_feed_and_atom(client: tuple[httpx.Client, str]) -> None:
    http, _ = client
    first = http.get("/feeds/a.json")
    assert first.status_code == 200
    assert first.headers["content-type"].startswith("application/feed+json")
    document = first.json()
    jsonschema.Draft202012Validator(SCHEMA).validate(document)
    assert document["feed_url"] == f"{http.base_url}/feeds/a.json"
    second = http.get(document["next_url"]).json()
    jsonschema.Draft202012Validator(SCHEMA).validate(second)
    assert "next_url" not in second or not http.get(second["next_url"]).json()["items"]
    assert document["items"][0]["id"] != second["items"][0]["id"]
    atom = http.get("/feeds/a.atom")
    assert atom.headers["content-type"].startswith("application/atom+xml")
    parsed = feedparser.parse(atom.content)
    assert not parsed.bozo and parsed.entries[0].id == document["items"][0]["id"]
    org = http.get("/orgs/pub.json").json()
    assert org["feed_url"] == f"{http.base_url}/orgs/pub.json"
    assert http.get("/feeds/a.json?before=abc").status_code == 400


def test_out_of_range_before_is_400_not_500(client: tuple[httpx.Client, str]) -> None:
    http, _ = client
    for before in ("9" * 20, str(2**63), "²", "0", "-1", "1e3"):
        for path in ("/feeds/a.json", "/feeds/a.atom", "/orgs/pub.json"):
            answer = http.get(path, params={"before": before})
            assert answer.status_code == 400, (path, before)
            assert "whole number" in answer.json()["error"]
    assert http.get("/feeds/a.json", params={"before": str(2**63 - 1)}).status_code == 200


def test_every_response_carries_the_security_headers(client: tuple[httpx.Client, str]) -> None:
    """Issue 14: CSP and nosniff were only sent by the review pages."""
    http, _ = client
    for path in ("/", "/health", "/feeds", "/feeds/a.json", "/feeds/a.atom", "/orgs/pub.json",
                 "/feeds/b.json", "/feeds/nope.json", "/nope", "/feeds/a.json?before=x",
                 "/review", "/review/review.css"):  # fmt: skip
        answer = http.get(path)
        headers = answer.headers
        assert headers["x-content-type-options"] == "nosniff", path
        assert headers["x-frame-options"] == "DENY", path
        assert headers["referrer-policy"] == "same-origin", path
        csp = headers["content-security-policy"]
        assert csp.startswith("default-src 'none'") and "frame-ancestors 'none'" in csp, path
        if headers.get("content-type", "").startswith("text/html"):
            assert "script-src" not in csp and "style-src 'self'" in csp, path
        else:
            assert "sandbox" in csp, path


def test_a_forged_host_header_never_reaches_the_links(client: tuple[httpx.Client, str]) -> None:
    """Issue 14: with no base URL, the Host header wrote feed_url and next_url into public,
    cached documents. Without --base-url the links name the address the server answered
    on; the Host header is ignored."""
    http, _ = client
    forged = {"Host": "evil.example"}
    document = http.get("/feeds/a.json", headers=forged).json()
    assert document["feed_url"] == f"{http.base_url}/feeds/a.json"
    assert document["next_url"].startswith(f"{http.base_url}/feeds/a.json?before=")
    atom = http.get("/feeds/a.atom", headers=forged).text
    assert "evil.example" not in atom and f"{http.base_url}/feeds/a.atom" in atom
    assert "evil.example" not in http.get("/orgs/pub.json", headers=forged).text
    listing = http.get("/feeds", headers=forged).json()
    assert listing[0]["json_url"] == f"{http.base_url}/feeds/a.json"
    assert "evil.example" not in http.get("/", headers=forged).text


def test_conditional_requests_get_304(client: tuple[httpx.Client, str]) -> None:
    http, _ = client
    first = http.get("/feeds/a.atom")
    etag, modified = first.headers["etag"], first.headers["last-modified"]
    again = http.get("/feeds/a.atom", headers={"If-None-Match": etag})
    assert again.status_code == 304 and again.content == b"" and again.headers["etag"] == etag
    assert http.get("/feeds/a.atom", headers={"If-Modified-Since": modified}).status_code == 304
    stale = http.get("/feeds/a.atom", headers={"If-None-Match": '"other"'})
    assert stale.status_code == 200
    early = "Mon, 12 Oct 2020 00:00:00 GMT"
    assert http.get("/feeds/a.atom", headers={"If-Modified-Since": early}).status_code == 200
    garbage = http.get("/feeds/a.atom", headers={"If-Modified-Since": "yesterday"})
    assert garbage.status_code == 200


def test_unknown_feeds_404_and_private_feeds_need_their_orgs_token(
    client: tuple[httpx.Client, str], store: Store
) -> None:
    http, token = client
    for path in ("/feeds/nope.json", "/feeds/nope.atom", "/orgs/nope.json", "/feeds/a.xml"):
        assert http.get(path).status_code == 404, path
    assert "no feed named 'nope'" in http.get("/feeds/nope.json").json()["error"]
    missing = http.get("/feeds/b.json")
    assert missing.status_code == 401
    assert missing.headers["www-authenticate"] == 'Bearer realm="feedmd"'
    assert "feedmd tokens create --org priv" in missing.json()["error"]
    for bad in ("Bearer wrong", f"Basic {token}", "Bearer", f"Bearer {token}x"):
        assert http.get("/feeds/b.json", headers={"Authorization": bad}).status_code == 401
    good = http.get("/feeds/b.json", headers={"Authorization": f"Bearer {token}"})
    assert good.status_code == 200 and len(good.json()["items"]) == 1
    assert good.headers["cache-control"].startswith("private")
    assert http.get("/orgs/priv.atom").status_code == 401
    other = store.create_token("pub", "", utcnow())
    wrong_org = http.get("/feeds/b.json", headers={"Authorization": f"Bearer {other}"})
    assert wrong_org.status_code == 401
    token_id = store.list_tokens()[0][0]
    assert store.revoke_token(token_id, utcnow())
    revoked = http.get("/feeds/b.json", headers={"Authorization": f"Bearer {token}"})
    assert revoked.status_code == 401
    stored = store_dump(store)
    assert token not in stored  # only its hash is kept


def test_the_base_url_option_sets_the_links(site: Site, store: Store, tmp_path: Path) -> None:
    populate(site, store)
    app = create_app(store.path, base_url="https://feeds.example.org/")
    with serving(app) as http:
        listing = http.get("/feeds").json()
        assert listing[0]["json_url"] == "https://feeds.example.org/feeds/a.json"
        atom = http.get("/feeds/a.atom")
        assert feedparser.parse(atom.content).feed.links[0].href == (
            "https://feeds.example.org/feeds/a.atom"
        )


class Clock:
    """A clock the test moves by hand."""

    def __init__(self, start: datetime) -> None:
        self.now = start

    def __call__(self) -> datetime:
        return self.now

    def advance(self, minutes: float) -> None:
        self.now += timedelta(minutes=minutes)


def test_the_scheduler_runs_each_feed_at_its_interval_and_survives_failures() -> None:
    clock = Clock(at(12))
    calls: list[tuple[str, tuple[str, ...]]] = []
    release = threading.Event()

    def run_org(org: str, feeds: tuple[FeedConfig, ...]) -> None:
        calls.append((org, tuple(f.name for f in feeds)))
        if org == "broken":
            raise RuntimeError("feed server on fire")
        if org == "slow":
            release.wait(5)

    feeds = (
        FeedConfig("fast", "http://x.example/f", "news", poll_minutes=15),
        FeedConfig("hourly", "http://x.example/h", "news", poll_minutes=60),
        FeedConfig("bad", "http://x.example/b", "broken", poll_minutes=15),
        FeedConfig("lazy", "http://x.example/l", "slow", poll_minutes=15),
    )
    scheduler = Scheduler(feeds=feeds, run_org=run_org, clock=clock)
    try:
        assert sorted(scheduler.tick()) == ["bad", "fast", "hourly", "lazy"]
        time.sleep(0.05)
        assert scheduler.tick() == []  # nothing due yet
        clock.advance(15)
        assert sorted(scheduler.tick()) == ["bad", "fast"]  # 'lazy' is still running
        clock.advance(15)
        release.set()
        time.sleep(0.05)
        for _ in range(100):
            if "slow" not in scheduler.status()["running"]:
                break
            time.sleep(0.01)
        assert sorted(scheduler.tick()) == ["bad", "fast", "lazy"]
        clock.advance(30)
        scheduler.wait_idle()
        assert sorted(scheduler.tick()) == ["bad", "fast", "hourly", "lazy"]
        scheduler.wait_idle()
        assert scheduler.status()["failures"] == {"broken": "RuntimeError: feed server on fire"}
        # the two feeds of one org go into one run, never two at once
        assert ("news", ("fast", "hourly")) in calls
        assert calls.count(("slow", ("lazy",))) == 3
    finally:
        release.set()
        scheduler.shutdown()


def test_the_pipeline_scheduler_runs_due_feeds_for_real(
    site: Site, store: Store, tmp_path: Path
) -> None:
    pope = site.put("http://four.example/pope", article_html("Pope", story("vatican")))
    feed = site.put(
        "http://feeds.example/a.xml",
        rss([FeedItemSpec("Pope Leo to undergo surgery for small growth", pope, utcnow())]),
    )
    config = make_config([("org", "a", feed)], site.start())
    config = config.__class__(**{**config.__dict__, "database": store.path})
    clock = Clock(utcnow())
    scheduler = pipeline_scheduler(config, clock=clock)
    try:
        assert scheduler.tick() == ["a"]
        scheduler.wait_idle()
        assert len(store.kept_items(feed="a")) == 1
        restarted = pipeline_scheduler(config, clock=clock)  # due at last fetch + 15 min
        assert restarted.tick() == []
        # the run stamped its fetch with the real clock, seconds after this clock's start
        # on a busy machine: half a minute more covers that, far less than an interval
        clock.advance(15.5)
        assert restarted.tick() == ["a"]
        restarted.wait_idle()
        restarted.shutdown()
        assert site.server is not None and site.server.count("feeds.example/a.xml") == 2
    finally:
        scheduler.shutdown()


def test_scheduled_runs_log_their_report_and_their_errors(
    site: Site, database: str, caplog: pytest.LogCaptureFixture
) -> None:
    """Issue 14: scheduled runs logged nothing. Each run now logs one INFO line with its
    org, feeds, counts and time; failed feeds a WARNING; a run that raises an ERROR with
    the exception."""
    caplog.set_level(logging.INFO, logger="feedmd")
    pope = site.put("http://four.example/pope", article_html("Pope", story("vatican")))
    feed = site.put(
        "http://feeds.example/a.xml",
        rss([FeedItemSpec("Pope Leo to undergo surgery for small growth", pope, utcnow())]),
    )
    config = make_config(
        [("org", "a", feed), ("org", "gone", "http://feeds.example/gone.xml")], site.start()
    )
    config = dataclasses.replace(config, database=database)
    scheduler = pipeline_scheduler(config, clock=Clock(utcnow()))
    try:
        assert scheduler.tick() == ["a", "gone"]
        scheduler.wait_idle()
    finally:
        scheduler.shutdown()
    lines = [(r.levelname, r.getMessage()) for r in caplog.records if r.name == "feedmd.scheduler"]
    info = [message for level, message in lines if level == "INFO"]
    assert len(info) == 1, lines
    assert re.fullmatch(
        r"run 1 of org org \(feeds a, gone\): partial; 1 found, 1 new, 1 kept, 0 dropped as"
        r" duplicates, 0 failed, 1 feeds failed, 0 webhook messages queued; \d+\.\d\d s",
        info[0],
    ), info[0]
    assert ("WARNING", "run 1: feed gone failed: HTTP 404") in lines

    caplog.clear()

    def broken(_org: str, _feeds: tuple[FeedConfig, ...]) -> None:
        raise RuntimeError("feed server on fire")

    failing = Scheduler(feeds=config.feeds[:1], run_org=broken, clock=Clock(utcnow()))
    try:
        failing.tick()
        failing.wait_idle()
    finally:
        failing.shutdown()
    (record,) = [r for r in caplog.records if r.name == "feedmd.scheduler"]
    assert record.levelname == "ERROR" and record.exc_info is not None
    assert record.getMessage().startswith("run of org org (feeds a) failed after ")
    assert "RuntimeError: feed server on fire" in caplog.text


def test_feedmd_serve_runs_the_scheduler_and_serves_with_a_token(
    site: Site, tmp_path: Path
) -> None:
    """The real command in a subprocess: --config makes it poll the feed; the feed is private
    (no `public` key yet), so it answers 401 without the token `tokens create` printed."""
    pope = site.put("http://four.example/pope", article_html("Pope", story("vatican")))
    feed = site.put(
        "http://feeds.example/a.xml",
        rss([FeedItemSpec("Pope Leo to undergo surgery for small growth", pope, utcnow())]),
    )
    server = site.start()
    config = tmp_path / "feedmd.toml"
    config.write_text(
        f'database = "{tmp_path / "serve.db"}"\nproxy = "{server.proxy_url}"\n'
        "allow_private_addresses = true\n"
        '[[orgs]]\nname = "org"\n[[orgs.feeds]]\nname = "a"\n'
        f'url = "{feed}"\n'
    )
    token = CliRunner().invoke(tokens_group, ["create", "--org", "org", "--config", str(config)])
    assert token.exit_code == 0, token.output
    sock = socket.socket()
    sock.bind(("127.0.0.1", 0))
    port = sock.getsockname()[1]
    sock.close()
    command = [sys.executable, "-c", "from feedmd.cli.delivery import serve_command as c; c()"]
    args = ["--config", str(config), "--port", str(port), "--tick", "0.2"]
    process = subprocess.Popen(
        [*command, *args], stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True
    )
    try:
        base = f"http://127.0.0.1:{port}"
        items: list[Any] = []
        deadline = time.monotonic() + 20
        while not items and time.monotonic() < deadline:
            time.sleep(0.2)
            with contextlib.suppress(httpx.TransportError):
                private = httpx.get(f"{base}/feeds/a.json", timeout=2)
                assert private.status_code == 401
                answer = httpx.get(
                    f"{base}/feeds/a.json",
                    headers={"Authorization": f"Bearer {token.output.strip()}"},
                    timeout=2,
                )
                items = answer.json()["items"]
        assert [item["title"] for item in items] == ["Pope Leo to undergo surgery for small growth"]
        # the items are readable once the run stored them; the run is counted when it
        # returns (after its delivery step and finish_run): wait for that, as for the items
        health = httpx.get(f"{base}/health", timeout=2).json()
        while health["scheduler"]["runs"] < 1 and time.monotonic() < deadline:
            time.sleep(0.1)
            health = httpx.get(f"{base}/health", timeout=2).json()
        assert health["scheduler"]["runs"] >= 1 and health["scheduler"]["failures"] == {}
    finally:
        process.terminate()
        output, _ = process.communicate(timeout=10)
    assert "feed a is private and org org has no token" not in output
    assert "note: no --base-url: links in served feeds name the address" in output
    # uvicorn's log configuration does not swallow the scheduler's lines (issue 14)
    assert re.search(
        r"INFO feedmd\.scheduler: run 1 of org org \(feeds a\): ok; 1 found, 1 new, 1 kept",
        output,
    ), output


def test_the_pipeline_scheduler_retries_a_failed_feed_sooner_than_its_interval(
    site: Site, store: Store, tmp_path: Path
) -> None:
    pope = site.put("http://four.example/pope", article_html("Pope", story("vatican")))
    feed = site.put(
        "http://feeds.example/a.xml",
        rss([FeedItemSpec("Pope Leo to undergo surgery for small growth", pope, utcnow())]),
    )
    site.route(feed, status=503, fail_times=1)
    config = make_config([("org", "a", feed)], site.start(), fetch_retries=0)
    config = config.__class__(**{**config.__dict__, "database": store.path})
    clock = Clock(utcnow())
    scheduler = pipeline_scheduler(config, clock=clock)
    try:
        assert scheduler.tick() == ["a"]
        scheduler.wait_idle()
        (spec,) = store.feed_specs(["a"])
        assert spec.error_streak == 1 and spec.next_due_at is not None
        # due again after feed_retry_base_minutes (2), not its 15-minute interval
        assert scheduler.next_due["a"] == spec.next_due_at
        clock.now = spec.next_due_at
        assert scheduler.tick() == ["a"]
        scheduler.wait_idle()
        assert len(store.kept_items(feed="a")) == 1
        assert store.feed_specs(["a"])[0].error_streak == 0
    finally:
        scheduler.shutdown()
