"""A loopback news network for the worker tests and the workers benchmark.

``orgs`` orgs of ``feeds_per_org`` feeds each; every org has its own stories, and each story
travels between the org's feeds: every feed lists ``entries_per_feed`` of them, each copy on
that feed's own publisher host under its own URL. Most copies carry the story's headline (a
stage-1 duplicate); every third carries a rewritten headline over the same body (found only
at stage 2, from the page). So an org with ``dedup_scope = "org"`` keeps exactly one item
per story, whatever feed brings it first, and every entry has a known story to check.

Prose is drawn from a made-up vocabulary with a fixed seed, so stories share no headline
tokens and almost no word 5-grams. With ``delay`` every feed and page answers after a fixed
time drawn once per URL from a seeded uniform distribution (the benchmark's realistic
latency; the same every run). Webhooks go to ``Receiver``, a real HTTP server on 127.0.0.1
that verifies each signature and records every message.
"""

from __future__ import annotations

import json
import random
import threading
from collections.abc import Iterator
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from http.server import BaseHTTPRequestHandler
from pathlib import Path
from typing import Any

from conftest import FeedItemSpec, article_html, rss
from loopback import LoopbackServer, QuietHandler, verify

SECRET_ENV = "FEEDMD_TEST_WEBHOOK_SECRET"
SYLLABLES = [c + v for c in "bdfgklmnprstvz" for v in ("a", "e", "i", "o", "u", "ai", "ou")]


@dataclass(frozen=True)
class SiteEntry:
    """One entry of one feed, and the story it tells (unique across the network)."""

    org: str
    feed: str
    link: str
    story: str


@dataclass
class NewsNetwork:
    """The network's feeds and pages, written under ``root/site`` for a FixtureServer."""

    root: Path
    orgs: int
    feeds_per_org: int
    stories_per_org: int = 6
    entries_per_feed: int = 4
    delay: tuple[float, float] | None = None
    seed: int = 15
    now: datetime = field(default_factory=lambda: datetime.now().astimezone())
    entries: list[SiteEntry] = field(default_factory=list)
    feeds: list[tuple[str, str, str]] = field(default_factory=list)  # (org, name, url)

    def build(self) -> NewsNetwork:
        """Write every feed, page and route; return self."""
        rng = random.Random(self.seed)
        vocabulary = sorted({_word(rng) for _ in range(4000)})
        delays = random.Random(self.seed + 1)
        routes: list[str] = []
        for o in range(self.orgs):
            org = f"o{o}"
            stories = [_story(rng, vocabulary) for _ in range(self.stories_per_org)]
            for f in range(self.feeds_per_org):
                name = f"{org}-f{f}"
                items = []
                for k in range(self.entries_per_feed):
                    s = (f + k) % self.stories_per_org
                    headline, rewrite, paragraphs = stories[s]
                    link = f"http://{org}-p{f}.example/story/{s}"
                    title = rewrite if (s + f) % 3 == 0 else headline
                    self._put(link, article_html(title, paragraphs))
                    published = self.now - timedelta(minutes=10 + 7 * k + f)
                    items.append(FeedItemSpec(title, link, published, publisher=f"P{f}"))
                    self.entries.append(SiteEntry(org, name, link, f"{org}/s{s}"))
                    routes.append(self._route(link, delays))
                url = f"http://feeds.{org}.example/{name}.xml"
                self._put(url, rss(items, title=name))
                routes.append(self._route(url, delays))
                self.feeds.append((org, name, url))
        (self.root / "routes.toml").write_text("".join(routes))
        return self

    def _put(self, url: str, text: str) -> None:
        path = self.root / "site" / url.split("://", 1)[1]
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text, encoding="utf-8")

    def _route(self, url: str, rng: random.Random) -> str:
        if self.delay is None:
            return ""
        seconds = rng.uniform(*self.delay)
        return f'[[route]]\nurl = "{url}"\ndelay_seconds = {seconds:.3f}\n'

    def stories(self) -> dict[str, set[str]]:
        """{org/story: the links that carry it}."""
        grouped: dict[str, set[str]] = {}
        for entry in self.entries:
            grouped.setdefault(entry.story, set()).add(entry.link)
        return grouped

    def config_toml(self, database: str, proxy: str, hooks: str | None, **settings: Any) -> str:
        """A feedmd.toml for the network: every org public, one webhook endpoint per org at
        ``hooks``/ORG (none when None), ``settings`` at the top."""
        values = {
            "dedup_scope": "org",
            "proxy": proxy,
            "allow_private_addresses": True,
            "fetch_timeout_seconds": 10.0,
            **settings,
        }
        lines = [f"database = {json.dumps(database)}"]
        lines += [f"{key} = {json.dumps(value)}" for key, value in values.items()]
        for o in range(self.orgs):
            org = f"o{o}"
            lines += ["", "[[orgs]]", f'name = "{org}"', "public = true"]
            if hooks:
                lines += [
                    "[[orgs.webhooks]]",
                    f'url = "{hooks}/{org}"',
                    f'secret_env = "{SECRET_ENV}"',
                ]
            for owner, name, url in self.feeds:
                if owner == org:
                    lines += ["[[orgs.feeds]]", f'name = "{name}"', f'url = "{url}"']
        return "\n".join(lines) + "\n"


def _word(rng: random.Random) -> str:
    return "".join(rng.choice(SYLLABLES) for _ in range(rng.randint(2, 4)))


def _sentence(rng: random.Random, vocabulary: list[str], words: int) -> str:
    chosen = [rng.choice(vocabulary) for _ in range(words)]
    return " ".join(chosen).capitalize() + "."


def _story(rng: random.Random, vocabulary: list[str]) -> tuple[str, str, list[str]]:
    """(headline, a rewritten headline sharing no word with it, six paragraphs), from the
    story's own 300 words: different stories then differ as real ones do, TLSH included."""
    vocabulary = rng.sample(vocabulary, 300)
    headline = " ".join(rng.choice(vocabulary) for _ in range(8)).capitalize()
    rewrite = " ".join(rng.choice(vocabulary) for _ in range(8)).capitalize()
    paragraphs = [
        " ".join(_sentence(rng, vocabulary, rng.randint(14, 22)) for _ in range(3))
        for _ in range(6)
    ]
    return headline, rewrite, paragraphs


class Receiver:
    """A webhook receiver on 127.0.0.1: answers 200 to every POST, after checking its
    Standard Webhooks signature, and records (path, webhook-id, valid, body)."""

    def __init__(self, secret: str) -> None:
        self.secret = secret
        self.seen: list[dict[str, Any]] = []
        self._lock = threading.Lock()
        self._server = LoopbackServer(self._handler())

    @property
    def url(self) -> str:
        """The base URL; each org's endpoint is URL/ORG."""
        return f"{self._server.base}/hook"

    def stop(self) -> None:
        """Stop serving."""
        self._server.stop()

    def messages(self) -> Iterator[dict[str, Any]]:
        """A snapshot of the messages received so far."""
        with self._lock:
            yield from list(self.seen)

    def _handler(self) -> type[BaseHTTPRequestHandler]:
        receiver = self

        class Handler(QuietHandler):
            def do_POST(self) -> None:
                body, headers = self.read_post()
                record = {
                    "path": self.path,
                    "id": headers.get("webhook-id"),
                    "valid": verify(receiver.secret, headers, body),
                    "data": json.loads(body)["data"],
                }
                with receiver._lock:
                    receiver.seen.append(record)
                self.send_response(200)
                self.send_header("Content-Length", "2")
                self.end_headers()
                self.wfile.write(b"ok")

        return Handler
