"""`feedmd worker` for real: worker processes on one store, a loopback news network whose
stories travel between the feeds of each org (tests/worker_site.py), a real webhook
receiver. Two workers never run one feed twice, never keep two copies of one story, never
send one message under two ids and lose no entry; a worker killed mid-run (SIGKILL, at a
chosen point) is taken over and what it stored is delivered; a live worker keeps its claim
past the expiry by renewing it; SIGTERM stops a worker after its run."""

from __future__ import annotations

import contextlib
import json
import os
import signal
import socket
import subprocess
import sys
import textwrap
import time
from collections import Counter
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import httpx
import pytest
from conftest import REPO
from worker_site import SECRET_ENV, NewsNetwork, Receiver

from feedmd.delivery import webhooks
from feedmd.settings import Settings
from feedmd.store import Store, connect_store, database_exists
from feedmd.timeutil import utcnow
from feedmd.tools.fixture_server import FixtureServer

pytestmark = pytest.mark.skipif(os.name == "nt", reason="SIGKILL and SIGTERM are POSIX")

TESTS = REPO / "tests"
# `feedmd worker ARGS` in a child process, with the DIE and PAUSE hooks of
# tests/kill_hooks.py installed on the Store.
DRIVER = textwrap.dedent(f"""\
    import sys
    sys.path.insert(0, {str(TESTS)!r})
    from kill_hooks import install
    from feedmd.store import Store
    install(Store)
    from feedmd.cli.main import main
    main(["worker", *sys.argv[1:]], prog_name="feedmd")
""")


@dataclass
class Network:
    """A built news network, served, with its receiver, config file and database."""

    site: NewsNetwork
    server: FixtureServer
    receiver: Receiver
    config: Path
    database: str
    driver: Path
    secret: str
    children: list[subprocess.Popen[str]] = field(default_factory=list)

    def start(
        self, *args: str, die: str = "", pause: str = "", **settings: Any
    ) -> subprocess.Popen[str]:
        """Start a worker process (``settings`` as ``--set`` pairs)."""
        sets = [f"--set={key}={value}" for key, value in settings.items()]
        env = {**os.environ, SECRET_ENV: self.secret, "DIE": die, "PAUSE": pause}
        child = subprocess.Popen(
            [sys.executable, str(self.driver), "--config", str(self.config), *args, *sets],
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
            env=env,
        )
        self.children.append(child)
        return child

    def close(self) -> None:
        """Kill the workers a failed test left running, stop the servers."""
        for child in self.children:
            if child.poll() is None:
                child.kill()
            child.communicate(timeout=30)
        self.server.stop()
        self.receiver.stop()

    def store(self) -> Store:
        """A connection to the workers' store (the caller closes it)."""
        return connect_store(self.database)


def build_network(
    root: Path, database: str, orgs: int, feeds_per_org: int, **kwargs: Any
) -> Network:
    """Serve a news network under ``root`` with a receiver and a worker driver."""
    site = NewsNetwork(root, orgs=orgs, feeds_per_org=feeds_per_org, **kwargs).build()
    secret = webhooks.new_secret()
    receiver = Receiver(secret)
    driver = root / "driver.py"
    driver.write_text(DRIVER)
    server = FixtureServer(root).start()
    config = root / "feedmd.toml"
    config.write_text(site.config_toml(database, server.proxy_url, receiver.url))
    return Network(site, server, receiver, config, database, driver, secret)


@pytest.fixture
def network(tmp_path: Path, database: str) -> Iterator[Network]:
    """Six orgs of three feeds (72 entries, 36 stories), every answer 50-250 ms late, on a
    fresh store (SQLite; also PostgreSQL for the tests marked ``both_backends``)."""
    built = build_network(tmp_path / "net", database, 6, 3, delay=(0.05, 0.25))
    yield built
    built.close()


def finish(child: subprocess.Popen[str], timeout: float = 120) -> dict[str, Any]:
    """Wait for a worker; return its --json totals (asserting it exited 0)."""
    stdout, stderr = child.communicate(timeout=timeout)
    assert child.returncode == 0, stderr
    assert "Traceback" not in stderr, stderr
    return dict(json.loads(stdout.strip().splitlines()[-1]))


def wait_until(predicate: Any, timeout: float = 60, what: str = "") -> None:
    ends = time.monotonic() + timeout
    while time.monotonic() < ends:
        if predicate():
            return
        time.sleep(0.05)
    raise AssertionError(f"timed out waiting for {what}")


def held_claims(net: Network) -> list[Any]:
    """The claims held now ([] before the first worker made the store)."""
    if not database_exists(net.database):
        return []
    store = net.store()
    try:
        return [row for row in store.org_claim_rows() if row.owner]
    except Exception:  # not migrated yet
        return []
    finally:
        store.close()


def check_network(net: Network, exactly_once: bool = True, failed: int = 0) -> dict[str, int]:
    """Every invariant of a finished network: each entry stored once, one kept item per
    story and every copy a duplicate of it, no run left running, no lease or claim held,
    every kept item's message delivered under one id (``exactly_once``: received once),
    ``failed`` runs recorded failed and every other run ok or abandoned (and recovered).
    Returns the kept item ids by link."""
    story_of = {entry.link: entry.story for entry in net.site.entries}
    store = net.store()
    try:
        rows = store._conn.execute(
            "SELECT i.id, f.name, i.entry_id, i.decision, i.matched_item_id FROM items i"
            " JOIN feeds f ON f.id = i.feed_id"
        ).fetchall()
        runs = dict(
            store._conn.execute("SELECT status, COUNT(*) FROM runs GROUP BY status").fetchall()
        )
        leases = store._conn.execute("SELECT COUNT(*) FROM run_leases").fetchone()[0]
        deliveries = store._conn.execute(
            "SELECT item_id, message_id, status FROM deliveries WHERE endpoint_id IS NOT NULL"
        ).fetchall()
        claims = store.org_claim_rows()
        unrecovered = store._conn.execute(
            "SELECT r.id FROM runs r WHERE r.status = 'abandoned' AND r.recovered_by IS NULL"
            " AND EXISTS (SELECT 1 FROM items i WHERE i.run_id = r.id)"
        ).fetchall()
    finally:
        store.close()
    # no entry lost, none stored twice
    stored = Counter((feed, entry) for _, feed, entry, _, _ in rows)
    expected = Counter((entry.feed, entry.link) for entry in net.site.entries)
    assert stored == expected
    # one kept item per story; every copy a duplicate of that one
    kept = {row[0]: story_of[row[2]] for row in rows if row[3] == "kept"}
    assert sorted(Counter(kept.values()).values()) == [1] * len(net.site.stories())
    for item_id, _, entry, decision, matched in rows:
        if decision == "duplicate":
            assert kept.get(matched) == story_of[entry], (item_id, entry)
        else:
            assert decision == "kept", (item_id, entry, decision)
    assert set(runs) <= {"ok", "abandoned", "failed"} and runs.get("failed", 0) == failed, runs
    assert leases == 0 and unrecovered == []
    assert all(claim.owner is None for claim in claims), claims
    # every kept item queued once per endpoint, delivered, under one message id
    assert sorted(item for item, _, _ in deliveries) == sorted(kept)
    assert {status for _, _, status in deliveries} == {"delivered"}
    id_of = {item: message for item, message, _ in deliveries}
    received = list(net.receiver.messages())
    assert all(message["valid"] for message in received)
    sent = Counter((m["data"]["_feedmd"]["canonical_item_id"], m["id"]) for m in received)
    assert {item for item, _ in sent} == set(kept)
    assert all(id_of[item] == message for item, message in sent), "a message under two ids"
    if exactly_once:
        assert set(sent.values()) == {1}, "a message received twice"
    return {"kept": len(kept), "runs": sum(runs.values()), "abandoned": runs.get("abandoned", 0)}


@pytest.mark.both_backends
def test_two_workers_share_the_orgs_and_run_every_feed_once(
    network: Network, tmp_path: Path
) -> None:
    release = tmp_path / "go"
    # both workers wait at their first claim until both are up, then claim at once
    workers = [network.start("--once", "--json", pause=f"claim_org:{release}") for _ in range(2)]
    for child in workers:
        assert child.stderr is not None
        assert child.stderr.readline().startswith("worker ")
    release.touch()
    totals = [finish(child) for child in workers]
    assert sum(t["runs"] for t in totals) == 6
    assert all(t["runs"] >= 1 for t in totals), totals  # both took a share
    assert sum(t["feeds"] for t in totals) == 18
    for _, _, url in network.site.feeds:
        assert network.server.count(url) == 1, url  # each feed fetched once, by one worker
    assert check_network(network) == {"kept": 36, "runs": 6, "abandoned": 0}


# The PostgreSQL variants of the kill and renewal tests are slow (12-13 s each): the
# default run checks PostgreSQL claims in test_worker_claims.py and two workers above.
@pytest.mark.both_backends(slow_on_postgresql=True)
@pytest.mark.parametrize("point", ["after:persist:1", "before:persist:2"])
def test_a_worker_killed_mid_run_is_taken_over_and_its_items_delivered_once(
    network: Network, point: str
) -> None:
    """Killed right after storing its first org (nothing delivered), or while about to
    store its second: the second worker takes the dead claim over at once (same host, no
    such process) and runs that org with nothing due, which recovers the dead run."""
    doomed = network.start("--once", "--json", die=point)
    doomed.communicate(timeout=120)
    assert doomed.returncode == -signal.SIGKILL
    held = held_claims(network)
    assert len(held) == 1  # the dead worker's claim stays behind
    survivor = finish(network.start("--once", "--json"))
    assert survivor["recoveries"] == 1
    outcome = check_network(network)
    assert outcome["kept"] == 36
    if point == "after:persist:1":
        assert outcome["abandoned"] == 1  # its items stored, recovered and delivered
        for _, name, url in network.site.feeds:
            assert network.server.count(url) == 1, name  # stored feeds are not fetched again
    else:
        # killed before its second store transaction: that org's feeds are fetched again
        assert sum(network.server.count(url) for _, _, url in network.site.feeds) == 21


@pytest.mark.both_backends(slow_on_postgresql=True)
def test_a_live_worker_renews_its_claim_past_the_expiry(network: Network, tmp_path: Path) -> None:
    """A run paused for over two claim lifetimes keeps its org: the other worker runs the
    rest and never that one. (3 s claims, renewed every second: a shorter one can run out
    while a loaded machine starves the renewing thread.)"""
    release = tmp_path / "go"
    claim = ("--worker-claim-seconds", "3")
    slow = network.start("--once", "--json", *claim, pause=f"persist:{release}")
    wait_until(lambda: Path(f"{release}.paused").exists(), what="the run's store step")
    (held,) = held_claims(network)
    paused_at = time.monotonic()
    other = finish(network.start("--once", "--json", *claim), timeout=120)
    time.sleep(max(0.0, 7 - (time.monotonic() - paused_at)))  # past two lifetimes
    (now_held,) = held_claims(network)
    assert now_held.owner == held.owner and now_held.expires_at > held.expires_at  # renewed
    release.touch()
    first = finish(slow)
    assert first["runs"] == 1 and other["runs"] == 5
    assert check_network(network)["runs"] == 6


def test_sigterm_lets_the_run_finish_then_gives_the_claim_back(
    network: Network, tmp_path: Path
) -> None:
    release = tmp_path / "go"
    worker = network.start("--json", "--poll-interval", "0.1", pause=f"persist:{release}")
    wait_until(lambda: Path(f"{release}.paused").exists(), what="the run's store step")
    worker.send_signal(signal.SIGTERM)
    time.sleep(0.5)
    assert worker.poll() is None  # still finishing its run
    release.touch()
    totals = finish(worker, timeout=60)
    assert totals["runs"] == 1
    assert held_claims(network) == []
    store = network.store()
    try:
        statuses = store._conn.execute("SELECT status FROM runs").fetchall()
    finally:
        store.close()
    assert statuses == [("ok",)]


def test_a_second_sigint_interrupts_the_run_and_still_gives_everything_back(
    network: Network, tmp_path: Path
) -> None:
    never = tmp_path / "never"
    worker = network.start("--json", pause=f"persist:{never}")
    wait_until(lambda: Path(f"{never}.paused").exists(), what="the run to reach its store step")
    worker.send_signal(signal.SIGINT)
    time.sleep(0.3)
    worker.send_signal(signal.SIGINT)
    totals = finish(worker, timeout=60)
    assert totals["runs"] == 0
    assert held_claims(network) == []
    store = network.store()
    try:
        runs = store._conn.execute("SELECT status, report_json FROM runs").fetchall()
        leases = store._conn.execute("SELECT COUNT(*) FROM run_leases").fetchone()[0]
        items = store._conn.execute("SELECT COUNT(*) FROM items").fetchone()[0]
    finally:
        store.close()
    assert [status for status, _ in runs] == ["failed"] and "KeyboardInterrupt" in runs[0][1]
    assert leases == 0 and items == 0
    # nothing was stored: the next worker runs every feed
    assert finish(network.start("--once", "--json"))["feeds"] == 18
    check_network(network, failed=1)


def test_an_org_whose_lease_another_run_holds_is_skipped_and_looked_at_next_poll(
    network: Network,
) -> None:
    """A `feedmd run` of org o0 beside the workers (its live lease): a worker that may not
    wait runs the other orgs, holds o0 back for one poll, and a later pass runs it."""
    finish(network.start("--once", "--json", "--max-feeds", "1"))  # makes the store
    store = network.store()
    try:
        lease = store.start_leased_run(["o0"], utcnow(), Settings(run_lease_wait_seconds=0))
        passed = finish(
            network.start(
                "--once", "--json", "--run-lease-wait-seconds", "0", "--poll-interval", "1"
            )
        )
        claims = {row.org: row for row in store.org_claim_rows()}
        store.release_lease(lease, completed=False)
        store.fail_run(lease.run_id, utcnow(), "a run beside the workers, for the test")
    finally:
        store.close()
    assert passed["lease_held"] == 1 and passed["runs"] == 5
    assert claims["o0"].owner is None and claims["o0"].not_before is not None
    assert claims["o1"].not_before is None
    time.sleep(1)  # one poll of --poll-interval 1
    after = finish(network.start("--once", "--json", "--poll-interval", "1"))
    assert after["runs"] == 1 and after["feeds"] == 2
    check_network(network, failed=1)


def test_max_feeds_stops_after_that_many_and_leaves_the_rest_due(network: Network) -> None:
    totals = finish(network.start("--once", "--json", "--max-feeds", "2"))
    assert totals["feeds"] == 2 and totals["runs"] == 1
    assert sum(network.server.count(url) for _, _, url in network.site.feeds) == 2
    rest = finish(network.start("--once", "--json"))
    assert rest["feeds"] == 16
    check_network(network)


def test_a_worker_without_feeds_says_so() -> None:
    child = subprocess.run(
        [sys.executable, "-m", "feedmd", "worker", "--once", "--config", os.devnull],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert child.returncode == 1
    assert "no feeds configured" in child.stderr and "Traceback" not in child.stderr


def test_serve_http_only_serves_beside_workers_and_runs_nothing(network: Network) -> None:
    """`feedmd serve --http-only` on the workers' config: it serves what the workers stored
    and, ticking every 0.1 s, never runs a feed itself."""
    finish(network.start("--once", "--json", "--max-feeds", "1"))
    sock = socket.socket()
    sock.bind(("127.0.0.1", 0))
    port = sock.getsockname()[1]
    sock.close()
    command = [sys.executable, "-m", "feedmd", "serve", "--config", str(network.config)]
    serve = subprocess.Popen(
        [*command, "--http-only", "--port", str(port), "--tick", "0.1"],
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
    )
    network.children.append(serve)
    base = f"http://127.0.0.1:{port}"
    health: dict[str, Any] = {}
    ends = time.monotonic() + 30
    while not health and time.monotonic() < ends:
        with contextlib.suppress(httpx.TransportError):
            health = httpx.get(f"{base}/health", timeout=2).json()
        time.sleep(0.1)
    items = httpx.get(f"{base}/feeds/o0-f0.json", timeout=5).json()["items"]
    time.sleep(1)  # ten ticks
    serve.terminate()
    serve.communicate(timeout=30)
    assert "scheduler" not in health and len(items) == 4
    store = network.store()
    try:
        assert store._conn.execute("SELECT COUNT(*) FROM runs").fetchone()[0] == 1
    finally:
        store.close()
    assert sum(network.server.count(url) for _, _, url in network.site.feeds) == 1
