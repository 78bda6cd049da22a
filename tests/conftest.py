"""Shared test fixtures: a real loopback HTTP server over a site built per test, real
SQLite files in tmp_path, and helpers to write feeds and article pages."""

from __future__ import annotations

import contextlib
import dataclasses
import json
import os
import sqlite3
import textwrap
import time
from collections.abc import Iterator, Sequence
from datetime import UTC, datetime
from email.utils import format_datetime
from pathlib import Path
from typing import Any
from xml.sax.saxutils import escape

import pytest
from pg_server import ENV, Cluster, PostgresServer, PostgresUnavailable

from feedmd.settings import Settings
from feedmd.settings.config import Config, FeedConfig, OutputConfig
from feedmd.store import Store, open_store
from feedmd.tools.demo import run_demo
from feedmd.tools.fixture_server import FixtureServer

# The digest's day and times follow the machine's zone by default (the timezone setting):
# the tests read them in UTC wherever they run.
os.environ["TZ"] = "UTC"
time.tzset()
# One BLAS thread per test worker: the workers (2 per core, scripts/test) each encoding
# with OpenBLAS's own threads oversubscribe the cores, and its threads spin while they
# wait. tests/model with 4 workers on 2 cores: 286 s with BLAS's threads, 50 s with one.
# The workers inherit it from the controller, which reads this file before they start.
os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")

REPO = Path(__file__).resolve().parent.parent
FIXTURES = REPO / "fixtures"
# The development evaluation data, vendored (eval/SOURCES.md names origins and licences).
EVAL = REPO / "eval"
DAY = datetime(2026, 10, 12, tzinfo=UTC)


def at(hour: int, minute: int = 0) -> datetime:
    """A time on the test day (2026-10-12, UTC)."""
    return DAY.replace(hour=hour, minute=minute)


@dataclasses.dataclass
class FeedItemSpec:
    """One item of a test RSS feed."""

    title: str
    link: str
    published: datetime
    guid: str | None = None
    publisher: str = "Test Publisher"


def rss(items: Sequence[FeedItemSpec], title: str = "Test feed") -> str:
    """An RSS 2.0 document with the given items."""
    parts = []
    for item in items:
        parts.append(
            "<item>"
            f"<title>{escape(item.title)}</title>"
            f"<link>{escape(item.link)}</link>"
            f'<guid isPermaLink="false">{escape(item.guid or item.link)}</guid>'
            f"<pubDate>{format_datetime(item.published, usegmt=True)}</pubDate>"
            f'<source url="http://publisher.example">{escape(item.publisher)}</source>'
            "</item>"
        )
    return (
        '<?xml version="1.0" encoding="UTF-8"?>\n<rss version="2.0"><channel>'
        f"<title>{escape(title)}</title><link>http://feeds.example/</link>"
        f"<description>test</description>{''.join(parts)}</channel></rss>\n"
    )


FURNITURE_NAV = " ".join(f'<li><a href="/section/{i}">Section {i}</a></li>' for i in range(30))


def article_html(title: str, paragraphs: Sequence[str], lang: str = "en") -> str:
    """An article page with realistic furniture around its paragraphs."""
    body = "\n".join(f"<p>{escape(p)}</p>" for p in paragraphs)
    related = "\n".join(
        f'<li><a href="/related/{i}">Related headline number {i} about something else '
        f"entirely that readers also clicked</a></li>"
        for i in range(8)
    )
    return textwrap.dedent(f"""\
        <!doctype html>
        <html lang="{lang}"><head><meta charset="utf-8"><title>{escape(title)}</title></head>
        <body>
        <div class="cookie-banner">We use cookies to improve your experience. Accept all
        cookies or manage your preferences in the settings of this website.</div>
        <nav><ul>{FURNITURE_NAV}</ul></nav>
        <main><article>
        <h1>{escape(title)}</h1>
        <p class="byline">By Staff Writer</p>
        {body}
        </article>
        <aside class="related"><h2>Most read</h2><ul>{related}</ul></aside>
        </main>
        <section class="comments"><h2>Comments</h2>
        <div class="comment"><p>This is a reader comment that goes on for quite a number of
        words so that it looks like prose to a naive extractor.</p></div></section>
        <footer><p>Copyright 2026 Test Publisher. All rights reserved.</p></footer>
        </body></html>
        """)


# The vocabulary of story(): ordinary local-news nouns (the soak test draws headlines from it).
STORY_WORDS = (
    "council",
    "budget",
    "river",
    "bridge",
    "station",
    "harbour",
    "minister",
    "court",
    "election",
    "vaccine",
    "factory",
    "strike",
    "rainfall",
    "drought",
    "museum",
    "festival",
    "school",
    "hospital",
    "market",
    "tariff",
    "airport",
    "railway",
    "league",
    "stadium",
    "theatre",
    "library",
    "orchard",
    "vineyard",
    "mine",
    "reactor",
    "satellite",
    "ferry",
)


def story(seed: str, paragraphs: int = 6) -> list[str]:
    """Deterministic distinct news prose for a story keyed by ``seed``."""
    words = STORY_WORDS
    offset = sum(ord(ch) for ch in seed)
    out = []
    for n in range(paragraphs):
        chosen = [words[(offset * (n + 3) + k * 7 + n) % len(words)] for k in range(9)]
        out.append(
            f"In {seed} the {chosen[0]} officials said on Monday that the {chosen[1]} and the "
            f"{chosen[2]} would be reviewed after residents raised concerns about the "
            f"{chosen[3]}, while the {chosen[4]} committee promised a report on the "
            f"{chosen[5]} near the {chosen[6]} by the end of the month, paragraph {n} of "
            f"the {chosen[7]} {chosen[8]} coverage."
        )
    return out


class Site:
    """A fixture site under tmp_path served by a real FixtureServer."""

    def __init__(self, root: Path) -> None:
        self.root = root
        (root / "site").mkdir(parents=True, exist_ok=True)
        self.routes: list[dict[str, Any]] = []
        self.server: FixtureServer | None = None

    def put(self, url: str, content: str | bytes) -> str:
        """Serve ``content`` at ``url`` (http://host/path); return the URL."""
        host_path = url.split("://", 1)[1].split("?", 1)[0]
        path = self.root / "site" / host_path
        path.parent.mkdir(parents=True, exist_ok=True)
        data = content.encode("utf-8") if isinstance(content, str) else content
        path.write_bytes(data)
        return url

    def route(self, url: str, **behaviour: Any) -> None:
        """Declare a special route (delay_seconds, status) before start()."""
        self.routes.append({"url": url, **behaviour})

    def start(self) -> FixtureServer:
        """Write routes.toml and start the server."""
        lines = []
        for route in self.routes:
            lines.append("[[route]]")
            lines += [f"{key} = {json.dumps(value)}" for key, value in route.items()]
        (self.root / "routes.toml").write_text("\n".join(lines) + "\n")
        self.server = FixtureServer(self.root).start()
        return self.server

    def stop(self) -> None:
        if self.server is not None:
            self.server.stop()


@pytest.fixture
def site(tmp_path: Path) -> Iterator[Site]:
    """A per-test fixture site (call ``site.start()`` after adding pages)."""
    built = Site(tmp_path / "fixture-root")
    yield built
    built.stop()


# The store backends. A test module marked ``pytest.mark.both_backends`` runs every test
# that uses ``backend`` (or ``database`` / ``store``, which depend on it) on each; other
# tests run on SQLite, the default.


def pytest_generate_tests(metafunc: pytest.Metafunc) -> None:
    """Parametrise ``backend`` over both backends in the modules marked for it;
    ``both_backends(slow_on_postgresql=True)`` puts the PostgreSQL variant in the slow set
    (a test that is already long on SQLite)."""
    marker = metafunc.definition.get_closest_marker("both_backends")
    if "backend" not in metafunc.fixturenames or marker is None:
        return
    postgresql: Any = "postgresql"
    if marker.kwargs.get("slow_on_postgresql"):
        postgresql = pytest.param("postgresql", marks=pytest.mark.slow)
    metafunc.parametrize("backend", ["sqlite", postgresql], indirect=True)


@pytest.fixture
def backend(request: pytest.FixtureRequest) -> str:
    """``sqlite`` or ``postgresql`` (both in modules marked ``both_backends``)."""
    return str(getattr(request, "param", "sqlite"))


_CLUSTER = pytest.StashKey[Cluster]()


def pytest_configure(config: pytest.Config) -> None:
    """Under pytest-xdist, one throwaway PostgreSQL cluster serves every worker: the
    controller starts it before the workers exist and names it to them in
    FEEDMD_TEST_POSTGRES, which they inherit (each worker still makes its own template
    databases there). A named server is used as it is."""
    controller = getattr(config.option, "dist", "no") != "no" and not hasattr(config, "workerinput")
    if not controller or os.environ.get(ENV, "").strip():
        return
    try:
        cluster = Cluster()
    except PostgresUnavailable:
        return  # each worker then tries its own, and a PostgreSQL test fails saying why
    config.stash[_CLUSTER] = cluster
    os.environ[ENV] = cluster.admin_url


def pytest_unconfigure(config: pytest.Config) -> None:
    """Stop the cluster that ``pytest_configure`` started."""
    cluster = config.stash.get(_CLUSTER, None)
    if cluster is not None:
        os.environ.pop(ENV, None)
        cluster.stop()


@pytest.fixture(scope="session")
def postgres_server() -> Iterator[PostgresServer]:
    """The tests' PostgreSQL server ($FEEDMD_TEST_POSTGRES, else a throwaway cluster)."""
    try:
        server = PostgresServer()
    except PostgresUnavailable as exc:
        pytest.fail(str(exc), pytrace=False)
    yield server
    server.stop()


def _database(
    request: pytest.FixtureRequest, backend: str, path: Path, migrated: bool
) -> Iterator[str]:
    if backend == "sqlite":
        yield str(path)
        return
    server: PostgresServer = request.getfixturevalue("postgres_server")
    url = server.fresh_database(migrated=migrated)
    yield url
    server.drop(url)


def copy_of(request: pytest.FixtureRequest, backend: str, source: Path, target: Path) -> str:
    """A private copy of the SQLite store ``source`` on ``backend``: SQLite's backup into
    ``target``, or a PostgreSQL database cloned from one copy per session (dropped after
    the test)."""
    if backend == "sqlite":
        with sqlite3.connect(source) as src, sqlite3.connect(target) as dst:
            src.backup(dst)
        src.close()
        dst.close()
        return str(target)
    server: PostgresServer = request.getfixturevalue("postgres_server")
    url = server.clone_of_sqlite(source)
    request.addfinalizer(lambda: server.drop(url))
    return url


@pytest.fixture
def database(request: pytest.FixtureRequest, backend: str, tmp_path: Path) -> Iterator[str]:
    """Where a new, empty store goes: a SQLite file path, or the URL of a fresh PostgreSQL
    database."""
    yield from _database(request, backend, tmp_path / "feedmd.db", migrated=False)


@pytest.fixture
def store(request: pytest.FixtureRequest, backend: str, tmp_path: Path) -> Iterator[Store]:
    """A real, migrated store: SQLite in tmp_path, or a fresh PostgreSQL database."""
    for url in _database(request, backend, tmp_path / "feedmd.db", migrated=True):
        opened = open_store(url)
        yield opened
        opened.close()


class DemoStores:
    """The demo's store (two runs of the fixture news day, ``feedmd demo``), built once a
    session for each events setting and handed out as private copies: a build costs ~5 s
    and a dozen test modules read it."""

    def __init__(self, factory: pytest.TempPathFactory) -> None:
        self._factory = factory
        self._built: dict[bool, Path] = {}

    def copy(self, events: bool = True) -> Path:
        """A new private copy of the demo store (``events=False``: built with events off,
        one output entry per kept item)."""
        if events not in self._built:
            out = self._factory.mktemp("demo-events" if events else "demo-no-events")
            overrides = None if events else {"events": False}
            self._built[events] = Path(run_demo(out, overrides, echo=lambda _: None).database)
        target = self._factory.mktemp("demo-copy") / "feedmd.db"
        with sqlite3.connect(self._built[events]) as src, sqlite3.connect(target) as dst:
            src.backup(dst)
        src.close()
        dst.close()
        return target


@pytest.fixture(scope="session")
def demo_stores(tmp_path_factory: pytest.TempPathFactory) -> DemoStores:
    """Private copies of the demo's store, built once a session (``DemoStores``)."""
    return DemoStores(tmp_path_factory)


# Debian's Chromium (or FEEDMD_TEST_CHROMIUM), driven by Playwright (Playwright's own browser
# download cannot run on these machines). As root in a container: no sandbox; no GPU; and
# nothing that phones home (this machine's closed network refuses those connections, and
# they slow the start).
CHROMIUM = Path(os.environ.get("FEEDMD_TEST_CHROMIUM") or "/usr/bin/chromium")
CHROMIUM_ARGS = [
    "--no-sandbox",
    "--disable-gpu",
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
]


@contextlib.contextmanager
def chromium_browser() -> Iterator[Any]:
    """A headless Chromium, for the time of a ``with`` block; without Debian's Chromium the
    test fails saying how to install it (scripts/test does).

    Opened in the test's body, after what it needs from the pipeline: Playwright's sync
    API keeps an event loop running in the thread while it is open, and any
    ``asyncio.run`` (a scrape, the demo) then fails. So neither a session-wide browser
    (tried: 65 failures) nor a fixture opened before the test body. A launch costs ~1 s."""
    if not CHROMIUM.exists():
        pytest.fail(f"needs Debian's Chromium at {CHROMIUM}: apt-get install -y chromium")
    from playwright.sync_api import sync_playwright

    with sync_playwright() as driver:
        launched = driver.chromium.launch(
            executable_path=str(CHROMIUM), headless=True, args=CHROMIUM_ARGS
        )
        try:
            yield launched
        finally:
            launched.close()


def make_config(
    feeds: Sequence[tuple[str, str, str]], server: FixtureServer | None = None, **settings: Any
) -> Config:
    """A Config of (org, name, url) feeds, proxied through the fixture server."""
    # the loopback fixture server is a private address: allowed on purpose for tests
    values: dict[str, Any] = {
        "fetch_timeout_seconds": 5.0,
        "allow_private_addresses": True,
        **settings,
    }
    if server is not None:
        values["proxy"] = server.proxy_url
    return Config(
        settings=Settings(**values),
        feeds=tuple(FeedConfig(name=name, url=url, org=org) for org, name, url in feeds),
        output=OutputConfig(),
    )


def fixture_bodies() -> dict[str, list[str]]:
    """The article bodies of the fixture news day (real-sounding, distinct prose)."""
    import importlib.util

    spec = importlib.util.spec_from_file_location("newsday", FIXTURES / "newsday.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return dict(module.BODIES)


def store_dump(store: Store) -> str:
    """Every stored value of every table as text (SQLite's dump; on PostgreSQL each row's
    values): for asserting that something is stored nowhere."""
    if store.backend == "sqlite":
        return "\n".join(store._conn.iterdump())
    tables = [
        row[0]
        for row in store._conn.execute(
            "SELECT tablename FROM pg_tables WHERE schemaname = current_schema()"
        )
    ]
    lines = [repr(row) for table in tables for row in store._conn.execute(f"SELECT * FROM {table}")]
    return "\n".join(lines)


def event_packs_in_step(store: Store) -> int:
    """Assert that the event vector packs (feedmd/store/event_packs.py) hold exactly what a
    rebuild from ``item_events`` would, and that no (org, model) is behind; return how many
    packs hold vectors."""
    from feedmd.store import event_packs

    conn = store._conn
    size = event_packs.PACK_ITEMS
    for org_id, model in conn.execute("SELECT DISTINCT org_id, model FROM item_events").fetchall():
        assert not event_packs.behind(conn, org_id, model)
    filled = 0
    for org_id, model, pack, records, item_ids, vectors in conn.execute(
        "SELECT org_id, model, pack, records, item_ids, vectors FROM event_packs"
    ).fetchall():
        rows = conn.execute(
            "SELECT item_id, vector FROM item_events WHERE org_id = ? AND model = ?"
            " AND item_id >= ? AND item_id < ? ORDER BY item_id",
            (org_id, model, pack * size, (pack + 1) * size),
        ).fetchall()
        assert records == len(rows)
        assert [
            int.from_bytes(bytes(item_ids)[n : n + 8], "little") for n in range(0, 8 * len(rows), 8)
        ] == [r[0] for r in rows]
        assert bytes(vectors) == b"".join(bytes(r[1]) for r in rows)
        filled += records > 0
    return filled
