"""Proof of scale-out (slow): four worker processes on one store (PostgreSQL, and SQLite)
over 50 feeds of the loopback news network (10 orgs of 5 feeds, every answer 100-800 ms
late), one of them killed with SIGKILL in the middle of a run. Every entry is decided once,
one item is kept per story, and every kept item reaches the real webhook receiver once,
under one id."""

from __future__ import annotations

import os
import signal
from collections.abc import Iterator
from pathlib import Path

import pytest
from test_worker import Network, build_network, check_network, finish, wait_until

from feedmd.store import database_exists

pytestmark = [
    pytest.mark.slow,
    pytest.mark.both_backends,
    pytest.mark.skipif(os.name == "nt", reason="SIGKILL and SIGTERM are POSIX"),
]


@pytest.fixture
def fifty_feeds(tmp_path: Path, database: str) -> Iterator[Network]:
    built = build_network(tmp_path / "net", database, 10, 5, delay=(0.1, 0.8))
    yield built
    built.close()


def lease_pids(net: Network) -> set[int]:
    """The processes holding a run lease now."""
    if not database_exists(net.database):
        return set()
    store = net.store()
    try:
        return {row[0] for row in store._conn.execute("SELECT pid FROM run_leases").fetchall()}
    except Exception:  # not migrated yet
        return set()
    finally:
        store.close()


def settled(net: Network) -> bool:
    try:
        check_network(net)
    except (AssertionError, KeyError):
        return False
    return True


def test_four_workers_fifty_feeds_one_killed_mid_run(fifty_feeds: Network) -> None:
    net = fifty_feeds
    workers = [net.start("--json", "--poll-interval", "0.2") for _ in range(4)]
    doomed = workers[0]
    # SIGKILL the first worker as soon as it holds a run lease: inside pipeline.run, in the
    # middle of its fetch and scrape steps (each answer takes 100-800 ms)
    wait_until(lambda: doomed.pid in lease_pids(net), timeout=60, what="a run of worker 0")
    doomed.send_signal(signal.SIGKILL)
    doomed.communicate(timeout=30)
    wait_until(lambda: settled(net), timeout=240, what="every feed run and delivered")
    for child in workers[1:]:
        child.send_signal(signal.SIGTERM)
    totals = [finish(child, timeout=60) for child in workers[1:]]
    outcome = check_network(net)
    assert outcome["kept"] == 60
    assert outcome["abandoned"] == 1  # the killed run, recovered
    assert sum(t["recoveries"] for t in totals) == 1
    assert sum(t["failed_runs"] for t in totals) == 0
    # the three survivors ran the other orgs between them, and the dead one's again
    assert sum(t["runs"] for t in totals) == 10
