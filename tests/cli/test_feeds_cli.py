"""`feedmd feeds`: add, remove and list feeds, Google News and Alerts feeds from their
query, OPML import and export, all through the command line, editing a real feedmd.toml
without losing its comments, and listing what a real run stored."""

from __future__ import annotations

import json
import os
import tomllib
from collections.abc import Iterator
from pathlib import Path
from urllib.parse import parse_qs, urlsplit

import click
import pytest
from click.testing import CliRunner
from conftest import FeedItemSpec, Site, article_html, at, rss, story

from feedmd.cli.main import main
from feedmd.settings.config import load_config

MINE = """\
# my feeds, hand-written
database = "mine.db"  # kept next to the config

[output]
directory = "public"

[[orgs]]
name = "news"
# the wires come first

[[orgs.feeds]]
name = "wire"  # the main one
url = "https://wire.example/rss"
"""


@pytest.fixture
def here(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Path]:
    for key in list(os.environ):
        if key.startswith("FEEDMD_"):
            monkeypatch.delenv(key)
    monkeypatch.chdir(tmp_path)
    yield tmp_path


def invoke(*args: str) -> click.testing.Result:
    return CliRunner().invoke(main, list(args), prog_name="feedmd")


def feeds(path: Path = Path("feedmd.toml")) -> dict[str, dict]:
    document = tomllib.loads(path.read_text())
    return {
        feed["name"]: {**feed, "org": org["name"]}
        for org in document.get("orgs", [])
        for feed in org.get("feeds", [])
    }


def test_add_and_remove_keep_comments_and_layout(here: Path) -> None:
    (here / "feedmd.toml").write_text(MINE)
    added = invoke("feeds", "add", "ap", "https://ap.example/rss", "--poll-minutes", "30")
    assert added.exit_code == 0, added.output
    text = (here / "feedmd.toml").read_text()
    assert text.startswith(MINE)  # everything the user wrote is there, as written
    assert feeds()["ap"] == {
        "name": "ap",
        "url": "https://ap.example/rss",
        "poll_minutes": 30,
        "org": "news",
    }
    other = invoke("feeds", "add", "local", "https://local.example/rss", "--org", "city")
    assert other.exit_code == 0 and feeds()["local"]["org"] == "city"
    # two orgs now: an org must be named
    ambiguous = invoke("feeds", "add", "x", "https://x.example/rss")
    assert ambiguous.exit_code == 2 and "--org" in ambiguous.output

    removed = invoke("feeds", "remove", "ap")
    assert removed.exit_code == 0, removed.output
    assert "ap" not in feeds() and "# the wires come first" in (here / "feedmd.toml").read_text()
    assert "# the main one" in (here / "feedmd.toml").read_text()
    missing = invoke("feeds", "remove", "ap")
    assert missing.exit_code == 1 and "no feed named 'ap'" in missing.output


def test_bad_additions_leave_the_file_unchanged(here: Path) -> None:
    (here / "feedmd.toml").write_text(MINE)
    upper = invoke("feeds", "add", "Pope Leo", "https://x.example/rss")
    assert upper.exit_code == 2 and "'pope-leo'" in upper.output
    twice = invoke("feeds", "add", "wire", "https://other.example/rss")
    assert twice.exit_code == 1 and "used by another feed" in twice.output
    assert "file left unchanged" in twice.output
    not_http = invoke("feeds", "add", "ftp", "ftp://x.example/rss")
    assert not_http.exit_code == 1 and "http(s) URL" in not_http.output
    neither = invoke("feeds", "add", "n")
    assert neither.exit_code == 2
    assert (here / "feedmd.toml").read_text() == MINE
    assert not [p for p in here.iterdir() if p.name.endswith(".tmp")]


def test_google_news_and_alerts_from_their_query(here: Path) -> None:
    result = invoke("feeds", "add", "--google-news", "pope leo", "--hl", "en-US")
    assert result.exit_code == 0, result.output
    assert (here / "feedmd.toml").exists()  # a starter config was written first
    feed = feeds()["pope-leo"]
    parts = urlsplit(feed["url"])
    assert (parts.scheme, parts.netloc, parts.path) == ("https", "news.google.com", "/rss/search")
    assert parse_qs(parts.query) == {
        "q": ["pope leo"],
        "hl": ["en-US"],
        "gl": ["US"],
        "ceid": ["US:en"],
    }
    assert feed["title"] == "Google News: pope leo"
    french = invoke(
        "feeds", "add", "vatican-fr", "--google-news", "Vatican", "--hl", "fr", "--gl", "FR"
    )
    assert french.exit_code == 0
    assert parse_qs(urlsplit(feeds()["vatican-fr"]["url"]).query)["ceid"] == ["FR:fr"]

    alerts = "https://www.google.com/alerts/feeds/0123456789/987654321"
    ok = invoke("feeds", "add", "alerts", "--google-alerts", alerts)
    assert ok.exit_code == 0 and feeds()["alerts"]["url"] == alerts
    wrong = invoke("feeds", "add", "nope", "--google-alerts", "https://evil.example/alerts/feeds/1")
    assert wrong.exit_code == 2 and "google.com/alerts/feeds" in wrong.output
    # the file still loads with the real loader
    assert len(load_config(here / "feedmd.toml", environ={}).feeds) == 3


OPML = b"""<?xml version="1.0" encoding="UTF-8"?>
<opml version="2.0">
  <head><title>My subscriptions</title></head>
  <body>
    <outline text="World News" title="World News">
      <outline type="rss" text="Reuters World" title="Reuters World"
               xmlUrl="https://reuters.example/world.xml" htmlUrl="https://reuters.example/"/>
      <outline type="rss" text="AP" xmlUrl="https://ap.example/rss"/>
    </outline>
    <outline type="rss" text="Local Paper" xmlUrl="https://local.example/feed"/>
    <outline type="rss" text="AP" xmlUrl="https://ap2.example/rss"/>
    <outline type="rss" text="Wire again" xmlUrl="https://wire.example/rss"/>
    <outline text="a folder with no feeds"/>
  </body>
</opml>
"""


def test_opml_import_and_export_round_trip(here: Path) -> None:
    (here / "feedmd.toml").write_text(MINE)
    (here / "subs.opml").write_bytes(OPML)
    result = invoke("feeds", "import", "subs.opml")
    assert result.exit_code == 0, result.output
    assert "imported 4 feeds" in result.output and "skipped 1" in result.output
    imported = feeds()
    assert imported["reuters-world"]["org"] == "world-news"
    assert imported["ap"]["url"] == "https://ap.example/rss"
    assert imported["ap-2"]["url"] == "https://ap2.example/rss"  # names stay unique
    assert imported["local-paper"]["org"] == "news"  # top level: the only org
    assert imported["reuters-world"]["title"] == "Reuters World"
    assert (here / "feedmd.toml").read_text().startswith(MINE)
    again = invoke("feeds", "import", "subs.opml")
    assert "imported 0 feeds" in again.output

    exported = invoke("feeds", "export", "-o", "out.opml")
    assert exported.exit_code == 0, exported.output
    # a fresh config imports the export into the same orgs and feeds
    (here / "fresh").mkdir()
    os.chdir(here / "fresh")
    assert invoke("init").exit_code == 0
    back = invoke("feeds", "import", "../out.opml")
    assert back.exit_code == 0, back.output
    assert {(f["org"], f["url"]) for f in feeds().values()} == {
        (f["org"], f["url"]) for f in imported.values()
    }
    stdout = invoke("feeds", "export")
    assert stdout.output.startswith('<?xml version="1.0" encoding="UTF-8"?>\n<opml version="2.0">')


@pytest.mark.parametrize(
    "document",
    [
        b'<?xml version="1.0"?><!DOCTYPE lolz [<!ENTITY lol "lol"><!ENTITY lol2 "&lol;&lol;">]>'
        b'<opml version="2.0"><body><outline xmlUrl="http://x.example/&lol2;"/></body></opml>',
        b'<?xml version="1.0"?><!DOCTYPE opml SYSTEM "file:///etc/passwd">'
        b'<opml version="2.0"><body/></opml>',
        b"<opml><body><outline",
        b"<rss><channel/></rss>",
    ],
)
def test_opml_with_a_dtd_or_broken_is_refused(here: Path, document: bytes) -> None:
    (here / "feedmd.toml").write_text(MINE)
    (here / "bad.opml").write_bytes(document)
    result = invoke("feeds", "import", "bad.opml")
    assert result.exit_code == 1
    assert "bad.opml:" in result.output and "Traceback" not in result.output
    assert (here / "feedmd.toml").read_text() == MINE


def test_list_shows_status_last_error_and_next_due(here: Path, site: Site) -> None:
    page = site.put("http://four.example/pope", article_html("Pope", story("vatican")))
    good = site.put(
        "http://feeds.example/a.xml",
        rss([FeedItemSpec("Pope Leo to undergo surgery for a small growth", page, at(9))]),
    )
    server = site.start()
    (here / "feedmd.toml").write_text(
        f'proxy = "{server.proxy_url}"\nallow_private_addresses = true\n[[orgs]]\nname = "o"\n'
    )
    assert invoke("feeds", "list").output.startswith("no feeds")
    assert invoke("feeds", "add", "good", good).exit_code == 0
    assert invoke("feeds", "add", "gone", "http://feeds.example/gone.xml").exit_code == 0
    listed = json.loads(invoke("feeds", "list", "--json").output)
    assert [(r["name"], r["status"], r["next_due"]) for r in listed] == [
        ("good", "never fetched", None),
        ("gone", "never fetched", None),
    ]
    run = invoke("run", "--now", "2026-10-12T12:00:00Z")
    assert run.exit_code == 3, run.output
    rows = {r["name"]: r for r in json.loads(invoke("feeds", "list", "--json").output)}
    assert rows["good"]["status"] == "ok" and rows["good"]["last_error"] is None
    assert rows["good"]["next_due"] == "2026-10-12T12:15:00Z"
    # a failed feed is due again after feed_retry_base_minutes (2), not its 15-minute poll
    assert rows["gone"]["error_streak"] == 1
    assert rows["gone"]["next_due"] == "2026-10-12T12:02:00Z"
    assert rows["gone"]["status"] == "error" and "404" in rows["gone"]["last_error"]
    text = invoke("feeds", "list").output
    assert "gone\to\terror" in text and "last error: " in text and "404" in text
