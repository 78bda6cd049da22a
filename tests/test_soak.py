"""A soak test (issue 14, slow set): a simulated fortnight at 15-minute polls over a
fixture site with faults injected on a seeded schedule.

Scale: 14 simulated days, 1,344 cycles, every one a real ``pipeline.run`` (in-process, or
in a child process that SIGKILLs itself for the kill cycles) followed by a webhook pass
with ``now`` advanced. A cycle where nothing changed is cheap (feeds answer 304), so the
whole fortnight goes through the real pipeline; what keeps it within a few minutes is the
number of new entries: about four stories a simulated day across three feeds on three
hosts, some with a copy on another feed, and a fourth page host (66 entries with seed 14).
It takes about 3.5 minutes on the shared 2-core machine (most of a quiet cycle is the
SSL context each HTTP client loads, ~40 ms).

The simulated clock starts at the real clock and runs ahead of it: step 6 queues a run's
webhook messages at the real clock (a replay's ``now`` is not when messages are sent),
so ``webhook_retry_hours`` is raised to 30 days to keep a message that failed once from
passing its deadline in simulated time.

Faults (deterministic, ``random.Random(SEED)``, ``FEEDMD_SOAK_SEED`` to vary it): two
outages of 2 to 10 hours of every host (its feed and pages answer 503), a 60-hour outage
of one page host (the control: entries whose window ends inside it are never kept, and at
least one stays ``failed``), 5xx bursts on single pages, pages that never finish
(a drip bounded by ``fetch_timeout_seconds``), a feed failing for hours, SIGKILLs at
chosen store calls, review corrections (a restore/merge/restore chain on a duplicate and
a merge/restore of a kept item), and each webhook receiver down for hours (one answers
500, the other drops the connection). The last two days are fault-free so that retries
settle.

At the end: every entry a feed served while its page was reachable inside its dedup
window (for 1.5 hours in a row: the 1-hour retry cap plus a cycle) is kept or a duplicate
(none ``failed``, none missing); every item is delivered to each endpoint (per-item and
batch) once per time it became kept (the run that kept it, then each restore) and no
message id was accepted twice; nothing pending, and nothing failed in the queue but the
messages a merge cancelled; the faults were felt (refused webhooks, recovered pages, an
abandoned run); the database passes ``check_invariants``' structural checks and
``PRAGMA integrity_check``.
"""

from __future__ import annotations

import dataclasses
import json
import os
import random
import signal
import sqlite3
import subprocess
import sys
import textwrap
import threading
import time
from collections import Counter
from collections.abc import Iterator
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from http.server import BaseHTTPRequestHandler
from pathlib import Path
from typing import Any

import pytest
from conftest import STORY_WORDS, FeedItemSpec, Site, article_html, make_config, rss, story
from loopback import SECRET_ENV, LoopbackServer, QuietHandler, verify

from feedmd.delivery import overrides, webhooks
from feedmd.pipeline import run
from feedmd.settings.config import Config, WebhookConfig
from feedmd.store import Store
from feedmd.timeutil import utcnow

pytestmark = [
    pytest.mark.slow,
    pytest.mark.skipif(os.name == "nt", reason="SIGKILL is POSIX"),
]

SEED = int(os.environ.get("FEEDMD_SOAK_SEED", "14"))
STEP = timedelta(minutes=15)
DAYS = 14
CYCLES = DAYS * 24 * 4
FAULT_FREE_FROM = 12 * 24 * 4  # the last two days: everything reachable, retries settle
LAST_ENTRY = 13 * 24 * 4  # no new entry in the last day: every window gets a chance
WINDOW = timedelta(hours=48)  # dedup_window_hours (the default)
RETRY_CAP_HOURS = 1.0  # item_retry_max_hours: a page that is back is tried within the hour
# a page must be reachable this many cycles in a row inside its window to count as
# "reachable" (the retry cap plus a cycle of slack); a shorter blip may be missed
REACHABLE_RUN = 6
HOSTS = ("alpha.example", "beta.example", "gamma.example", "delta.example")
FEEDS = {
    "alpha": "http://alpha.example/feed.xml",
    "beta": "http://beta.example/rss",
    "gamma": "http://gamma.example/feed.xml",
}
SETTINGS: dict[str, Any] = {
    "fetch_retries": 0,
    # not lower: extraction runs on the event loop (see test_crash_safety)
    "fetch_timeout_seconds": 1.5,
    "item_retry_max_hours": RETRY_CAP_HOURS,
    "webhook_timeout_seconds": 1.0,
    "webhook_disable_after_failures": 1000,
    # step 6 queues a run's messages at the real clock, not at the run's ``now``: with the
    # default 24 h a message that failed once would be past its deadline in simulated time
    "webhook_retry_hours": 24.0 * 30,
    "run_lease_wait_seconds": 5.0,
}
WORDS = [
    *STORY_WORDS,
    "glacier",
    "parliament",
    "senate",
    "pension",
    "wildfire",
    "flood",
    "tunnel",
    "canal",
    "lighthouse",
    "observatory",
    "zoo",
    "cathedral",
    "refinery",
    "pipeline",
    "port",
    "union",
    "teachers",
    "nurses",
    "farmers",
    "fishermen",
    "miners",
]

# One cycle in a child process that SIGKILLs itself at the n-th call of Store.<name>
# (before it runs or after it returned): the DIE hook of tests/kill_hooks.py.
DRIVER = textwrap.dedent("""\
    import json, os, signal, sys
    from datetime import datetime
    sys.path.insert(0, sys.argv[2])
    from conftest import make_config
    from feedmd.settings.config import WebhookConfig
    from feedmd.tools.fixture_server import FixtureServer
    from feedmd.pipeline import run
    from feedmd.store import Store, open_store
    import dataclasses

    spec = json.loads(sys.argv[1])
    from kill_hooks import install

    install(Store)
    config = make_config([tuple(f) for f in spec["feeds"]], None, **spec["settings"])
    hooks = tuple(WebhookConfig(**hook) for hook in spec["hooks"])
    config = dataclasses.replace(config, webhooks=hooks)
    store = open_store(spec["db"])
    run(store, config, now=datetime.fromisoformat(spec["now"]), output_dir=spec["out"])
    print("finished without dying", flush=True)
""")
KILLS = (
    "after:persist:1",
    "before:persist:1",
    "before:finish_run:1",
    "after:start_leased_run:1",
    "after:finish_run:1",
    "before:sync_endpoints:1",
)


class SoakReceiver:
    """A webhook receiver that is up (200) or down (``down`` = 500 or 'close'); it records
    every request with the answer it got."""

    def __init__(self, secret: str) -> None:
        self.secret = secret
        self.down: Any = None
        self.seen: list[dict[str, Any]] = []
        self._lock = threading.Lock()
        self._server = LoopbackServer(self._handler())

    @property
    def url(self) -> str:
        return f"{self._server.base}/hook"

    def stop(self) -> None:
        self._server.stop()

    def accepted(self) -> list[dict[str, Any]]:
        return [seen for seen in self.seen if seen["status"] == 200]

    def _handler(self) -> type[BaseHTTPRequestHandler]:
        receiver = self

        class Handler(QuietHandler):
            def do_POST(self) -> None:
                body, headers = self.read_post()
                action = receiver.down or 200
                with receiver._lock:
                    receiver.seen.append(
                        {
                            "id": headers.get("webhook-id"),
                            "body": body,
                            "valid": verify(receiver.secret, headers, body),
                            "status": action,
                        }
                    )
                if action == "close":
                    self.close_connection = True
                    return
                payload = b"ok" if action == 200 else b"down"
                self.send_response(int(action))
                self.send_header("Content-Length", str(len(payload)))
                self.end_headers()
                self.wfile.write(payload)

        return Handler


@dataclass
class Entry:
    """One feed entry of the simulation and what the world did to it."""

    feed: str
    title: str
    link: str
    cycle: int  # published at this cycle
    seed: str  # its prose (a copy carries its original's)
    served: int | None = None  # first cycle a feed served it (None: never)


@dataclass
class World:
    """The fortnight's schedule: entries, and which URLs fail at which cycle."""

    entries: list[Entry] = field(default_factory=list)
    # (host or url, first cycle, end cycle, behaviour)
    faults: list[tuple[str, int, int, dict[str, Any]]] = field(default_factory=list)
    kills: dict[int, str] = field(default_factory=dict)
    receiver_down: list[tuple[int, int, int, Any]] = field(default_factory=list)

    def behaviour(self, url: str, cycle: int) -> dict[str, Any] | None:
        host = url.split("/")[2]
        for target, start, end, behaviour in self.faults:
            if start <= cycle < end and target in (host, url):
                return behaviour
        return None

    def reachable(self, url: str, cycle: int) -> bool:
        return self.behaviour(url, cycle) is None


def build_world(rng: random.Random) -> World:
    world = World()
    pages_host = {"alpha": "alpha.example", "beta": "beta.example", "gamma": "gamma.example"}
    number = 0
    for day in range(DAYS):
        for _ in range(rng.randint(3, 5)):
            cycle = day * 96 + rng.randrange(96)
            if cycle >= LAST_ENTRY:
                continue
            number += 1
            words = rng.sample(WORDS, 5)
            title = f"{words[0].title()} {words[1]} deal over {words[2]} and {words[3]} {number}"
            feed = rng.choice(sorted(pages_host))
            host = "delta.example" if rng.random() < 0.3 else pages_host[feed]
            link = f"http://{host}/news/{number}-{words[4]}"
            world.entries.append(Entry(feed, title, link, cycle, title))
            if host != "delta.example" and rng.random() < 0.35:  # a copy on another feed
                other = rng.choice(sorted(set(pages_host) - {feed}))
                later = min(cycle + rng.randint(1, 12), LAST_ENTRY - 1)
                copy = f"http://{pages_host[other]}/wire/{number}"
                world.entries.append(
                    Entry(other, f"{title} - {other.title()} Wire", copy, later, title)
                )
    # the control: two stories on delta.example as its 60-hour outage (below) begins
    for number, cycle in ((901, 4 * 96 + 4), (902, 4 * 96 + 20)):
        title = f"Lighthouse keepers vote on observatory pension plan {number}"
        link = f"http://delta.example/news/{number}-lighthouse"
        world.entries.append(Entry("alpha", title, link, cycle, title))
    world.entries.sort(key=lambda e: e.cycle)

    down = {"status": 503}
    for host in ("alpha.example", "beta.example", "gamma.example", "delta.example"):
        for _ in range(2):  # outages of 2 to 10 hours (feed and pages of the host)
            start = rng.randrange(FAULT_FREE_FROM - 40)
            world.faults.append((host, start, start + rng.randint(8, 40), down))
    # the control: delta.example is gone for 60 hours from day 4
    world.faults.append(("delta.example", 4 * 96, 4 * 96 + 240, down))
    pages = [e.link for e in world.entries if e.cycle < FAULT_FREE_FROM - 8]
    for link in rng.sample(pages, 12):  # 5xx bursts of one to three cycles
        entry_cycle = next(e.cycle for e in world.entries if e.link == link)
        start = entry_cycle + rng.randint(0, 2)
        world.faults.append((link, start, start + rng.randint(1, 3), {"status": 502}))
    for link in rng.sample(pages, 3):  # pages that never finish, for hours
        entry_cycle = next(e.cycle for e in world.entries if e.link == link)
        world.faults.append((link, entry_cycle, entry_cycle + rng.randint(4, 16), {"drip": 1}))
    for feed_url in rng.sample(sorted(FEEDS.values()), 2):  # a feed failing for hours
        start = rng.randrange(FAULT_FREE_FROM - 40)
        world.faults.append((feed_url, start, start + rng.randint(4, 24), {"status": 500}))

    # kills on cycles that have new entries to store (after the first day)
    busy = sorted({e.cycle for e in world.entries if 96 <= e.cycle < FAULT_FREE_FROM})
    for kill, cycle in zip(KILLS, rng.sample(busy, len(KILLS)), strict=True):
        world.kills[cycle] = kill
    # receivers down for hours: index 0 answers 500, index 1 drops the connection
    world.receiver_down.append((0, 3 * 96 + 10, 3 * 96 + 10 + 24, 500))
    world.receiver_down.append((1, 9 * 96 + 30, 9 * 96 + 30 + 32, "close"))
    return world


def routes_at(world: World, cycle: int) -> dict[str, dict[str, Any]]:
    """The fixture server's routes at ``cycle`` (only URLs that misbehave)."""
    routes = {}
    urls = [e.link for e in world.entries] + list(FEEDS.values())
    for url in urls:
        behaviour = world.behaviour(url, cycle)
        if behaviour is None:
            continue
        if "drip" in behaviour:
            routes[url] = {"url": url, "drip_seconds": 3.0}
        else:
            routes[url] = {"url": url, "status": behaviour["status"]}
    return routes


def publish(site: Site, world: World, cycle: int, start: datetime) -> None:
    """Write each feed as it stands at ``cycle``: entries of the last 36 hours."""
    for feed, url in FEEDS.items():
        live = [e for e in world.entries if e.feed == feed and cycle - 144 < e.cycle <= cycle]
        items = [
            FeedItemSpec(e.title, e.link, start + e.cycle * STEP, publisher=feed)
            for e in reversed(live)
        ]
        site.put(url, rss(items, title=f"{feed} news"))


@pytest.fixture
def receivers(monkeypatch: pytest.MonkeyPatch) -> Iterator[tuple[SoakReceiver, SoakReceiver]]:
    secret = webhooks.new_secret()
    monkeypatch.setenv(SECRET_ENV, secret)
    first, second = SoakReceiver(secret), SoakReceiver(secret)
    yield first, second
    first.stop()
    second.stop()


def run_killed(driver: Path, config: Config, db: Path, out: Path, now: datetime, die: str) -> int:
    spec = {
        "feeds": [(f.org, f.name, f.url) for f in config.feeds],
        "settings": {**SETTINGS, "proxy": config.settings.proxy},
        "hooks": [dataclasses.asdict(hook) for hook in config.webhooks],
        "db": str(db),
        "out": str(out),
        "now": now.isoformat(),
    }
    tests = str(Path(__file__).resolve().parent)
    child = subprocess.run(
        [sys.executable, str(driver), json.dumps(spec), tests],
        env={**os.environ, "DIE": die},
        capture_output=True,
        text=True,
        timeout=120,
    )
    return child.returncode


def items_per_message(body: bytes) -> list[int]:
    data = json.loads(body)["data"]
    items = data.get("items", [data])
    return [int(item["_feedmd"]["canonical_item_id"]) for item in items]


def test_a_fortnight_of_faults(
    site: Site, store: Store, tmp_path: Path, receivers: tuple[SoakReceiver, SoakReceiver]
) -> None:
    rng = random.Random(SEED)
    world = build_world(rng)
    for entry in world.entries:
        site.put(entry.link, article_html(entry.title, story(entry.seed)))
    start = utcnow().replace(second=0, microsecond=0) + timedelta(minutes=1)
    publish(site, world, 0, start)
    server = site.start()
    per_item, batch = receivers
    hooks = (
        WebhookConfig(url=per_item.url, org="org", secret_env=SECRET_ENV),
        WebhookConfig(url=batch.url, org="org", secret_env=SECRET_ENV, batch=True),
    )
    config = dataclasses.replace(
        make_config([("org", n, u) for n, u in FEEDS.items()], server, **SETTINGS),
        webhooks=hooks,
    )
    policy = webhooks.policy_from(config.settings)
    out = tmp_path / "out"
    db = tmp_path / "feedmd.db"
    driver = tmp_path / "driver.py"
    driver.write_text(DRIVER)
    restores: Counter[int] = Counter()
    corrections: list[tuple[int, str]] = []
    started = time.monotonic()
    correction_plan = {5 * 96 + 40: "restore", 5 * 96 + 48: "merge", 5 * 96 + 56: "restore"}
    correction_plan |= {8 * 96 + 20: "merge-kept", 8 * 96 + 32: "restore-kept"}
    chain: dict[str, int] = {}
    kills = 0
    # one client for the test's own webhook passes (a client costs an SSL context, ~40 ms)
    client = webhooks.webhook_client(policy)

    for cycle in range(CYCLES):
        now = start + cycle * STEP
        publish(site, world, cycle, start)
        server.routes = routes_at(world, cycle)
        for index, first, end, answer in world.receiver_down:
            (per_item, batch)[index].down = answer if first <= cycle < end else None
        before = {name: server.count(url) for name, url in FEEDS.items()}
        if cycle in world.kills:
            code = run_killed(driver, config, db, out, now, world.kills[cycle])
            assert code == -signal.SIGKILL, (cycle, world.kills[cycle], code)
            kills += 1
        else:
            run(store, config, now=now, output_dir=str(out))
            for name, url in FEEDS.items():
                if server.count(url) > before[name] and world.reachable(url, cycle):
                    for entry in world.entries:
                        fresh = cycle - 144 < entry.cycle <= cycle
                        if entry.feed == name and entry.served is None and fresh:
                            entry.served = cycle
        webhooks.deliver_due(store, policy, now=now, client=client)
        if cycle % 96 == 95:
            print(f"day {cycle // 96 + 1}: {time.monotonic() - started:.0f} s", flush=True)

        action = correction_plan.get(cycle)
        if action is not None:
            _correct(store, action, chain, restores, now)
            corrections.append((cycle, action))
            webhooks.deliver_due(store, policy, now=now, client=client)

    elapsed = time.monotonic() - started
    # a final pass well after everything: nothing left to retry
    webhooks.deliver_due(
        store, policy, now=start + CYCLES * STEP + timedelta(hours=6), client=client
    )
    client.close()
    print(f"soak: {len(world.entries)} entries, {CYCLES} cycles in {elapsed:.0f} s")
    assert len(corrections) == len(correction_plan) and kills == len(KILLS)

    rows = {
        str(row["entry_id"]): row
        for row in store._db.query("SELECT i.id, i.entry_id, i.decision, i.run_id FROM items i")
    }
    must, control = [], []
    for entry in world.entries:
        if entry.served is None:
            continue
        cycles = range(entry.served, entry.cycle + int(WINDOW / STEP) - 1)
        if _longest_run(world, entry.link, cycles) >= REACHABLE_RUN:
            must.append(entry)
        elif _longest_run(world, entry.link, cycles) == 0:
            control.append(entry)
    assert len(must) > 40 and control, (len(must), len(control))
    stuck = [
        (e.link, rows[e.link]["decision"] if e.link in rows else "missing")
        for e in must
        if e.link not in rows or rows[e.link]["decision"] not in ("kept", "duplicate")
    ]
    assert stuck == []
    assert {rows[e.link]["decision"] for e in control} <= {"failed", "duplicate"}
    assert "failed" in {rows[e.link]["decision"] for e in control}

    # deliveries: once per time an item became kept, on both endpoints
    first_kept = _kept_by_runs(store)
    final_kept = {int(row["id"]) for row in rows.values() if row["decision"] == "kept"}
    for receiver in (per_item, batch):
        assert all(seen["valid"] for seen in receiver.seen)
        accepted = receiver.accepted()
        ids = Counter(seen["id"] for seen in accepted)
        assert [i for i, n in ids.items() if n > 1] == []
        got = Counter(i for seen in accepted for i in items_per_message(seen["body"]))
        for item in final_kept:
            assert got[item] >= 1, item
        expected = Counter({item: 1 for item in first_kept}) + restores
        assert got == expected, {
            i: (got[i], expected[i]) for i in set(got) | set(expected) if got[i] != expected[i]
        }
        # the outage was felt: refused messages were sent again until accepted
        assert any(seen["status"] != 200 for seen in receiver.seen)
    queue = store.list_deliveries()
    assert {row.status for row in queue} <= {"delivered", "failed"}
    # failed only as a merge cancels a message not sent yet, never given up on
    assert all("cancelled" in (r.last_error or "") for r in queue if r.status == "failed")
    assert store.pending_count() == 0

    # the faults were felt: pages failed and were recovered by later runs
    recovered = {
        int(row["item_id"])
        for row in store._db.query("SELECT item_id FROM item_attempts WHERE outcome = 'recovered'")
    }
    assert len(recovered) >= 3, recovered
    statuses = Counter(str(row["status"]) for row in store._db.query("SELECT status FROM runs"))
    assert statuses["abandoned"] >= 1, statuses
    # an item only a review restored is in the files once a feed's files are rewritten
    # (``overrides.restore(output=...)``, or the feed's next run), not in run deliveries
    _check_database(db, files=first_kept)


def _kept_by_runs(store: Store) -> set[int]:
    """Items a run kept: kept now without an override, or kept before their first one."""
    first: dict[int, str] = {}
    for row in store._db.query("SELECT item_id, previous_json FROM overrides ORDER BY id"):
        first.setdefault(int(row["item_id"]), json.loads(row["previous_json"])["decision"])
    kept = {int(r["id"]) for r in store._db.query("SELECT id FROM items WHERE decision='kept'")}
    return {item for item in kept if item not in first} | {
        item for item, decision in first.items() if decision == "kept"
    }


def _longest_run(world: World, url: str, cycles: range) -> int:
    best = length = 0
    for cycle in cycles:
        length = length + 1 if world.reachable(url, cycle) else 0
        best = max(best, length)
    return best


def _correct(
    store: Store, action: str, chain: dict[str, int], restores: Counter[int], now: datetime
) -> None:
    """Review corrections: restore a duplicate, merge it back, restore it again; merge a
    kept item into another, then restore it."""
    if action == "restore" and "dup" not in chain:
        row = next(
            iter(
                store._db.query(
                    "SELECT id, matched_item_id FROM items WHERE decision = 'duplicate'"
                    " AND matched_item_id IS NOT NULL ORDER BY id LIMIT 1"
                )
            )
        )
        chain["dup"], chain["dup_of"] = int(row["id"]), int(row["matched_item_id"])
    if action == "restore":
        overrides.restore(store, chain["dup"], "alice", now, retry_hours=720)
        restores[chain["dup"]] += 1
    elif action == "merge":
        overrides.merge(store, chain["dup"], chain["dup_of"], "bob", now)
    elif action == "merge-kept":
        kept = [
            int(row["id"])
            for row in store._db.query(
                "SELECT id FROM items WHERE decision = 'kept' AND rule != 'override'"
                " ORDER BY id LIMIT 2"
            )
        ]
        chain["kept"], chain["into"] = kept
        overrides.merge(store, chain["kept"], chain["into"], "bob", now)
    elif action == "restore-kept":
        overrides.restore(store, chain["kept"], "alice", now, retry_hours=720)
        restores[chain["kept"]] += 1


def _check_database(path: Path, files: set[int]) -> None:
    """check_invariants' structural checks (its decisions are compared with a reference
    run of the demo day, which does not apply here); ``files``: the items a run kept, each
    recorded as delivered to the files once."""
    conn = sqlite3.connect(path)
    try:
        assert conn.execute("PRAGMA integrity_check").fetchone()[0] == "ok"
        assert conn.execute("PRAGMA foreign_key_check").fetchall() == []
        repeated = conn.execute(
            "SELECT feed_id, entry_id, COUNT(*) FROM items GROUP BY feed_id, entry_id"
            " HAVING COUNT(*) > 1"
        ).fetchall()
        assert repeated == []
        dangling = conn.execute(
            "SELECT d.id FROM items d LEFT JOIN items k ON k.id = d.matched_item_id"
            " WHERE d.decision = 'duplicate' AND (k.id IS NULL OR k.decision != 'kept')"
        ).fetchall()
        assert dangling == []
        statuses = dict(conn.execute("SELECT status, COUNT(*) FROM runs GROUP BY status"))
        assert "running" not in statuses, statuses
        assert set(statuses) <= {"ok", "partial", "abandoned"}, statuses
        assert conn.execute("SELECT COUNT(*) FROM run_leases").fetchone()[0] == 0
        twice = conn.execute(
            "SELECT item_id, target FROM deliveries GROUP BY item_id, target HAVING COUNT(*) > 1"
        ).fetchall()
        assert twice == []
        kept = {row[0] for row in conn.execute("SELECT id FROM items WHERE decision = 'kept'")}
        delivered = {
            row[0] for row in conn.execute("SELECT item_id FROM deliveries WHERE target = 'files'")
        }
        assert kept & files <= delivered, sorted((kept & files) - delivered)
        unrecovered = conn.execute(
            "SELECT r.id FROM runs r WHERE r.status = 'abandoned' AND r.recovered_by IS NULL"
            " AND EXISTS (SELECT 1 FROM items i WHERE i.run_id = r.id)"
        ).fetchall()
        assert unrecovered == []
    finally:
        conn.close()
