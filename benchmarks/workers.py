"""workers: feeds processed per minute by 1, 2, 4 ... `feedmd worker` processes on one database.

1. Build the loopback news network of the worker tests (``tests/worker_site.py``): ``--orgs``
   orgs of ``--feeds-per-org`` feeds, stories travelling between the feeds of each org, every
   feed and page answering after a fixed delay drawn once per URL from a uniform
   ``--delay-ms`` distribution (100-800 ms by default: publishers far away; seed ``--seed``, so
   every run and every worker count sees the same delays). A webhook receiver on 127.0.0.1
   takes one message per kept item.
2. For each count in ``--workers``: a fresh database, that many ``feedmd worker --once
   --json`` processes started together, each claiming orgs until none is left.
3. Report per count: feeds per minute over the span of the runs (first run started to last
   run finished, from the workers' own clocks: process start-up is left out, as it is for
   long-running workers) and over the wall time (start-up included), the ratios to the first
   count, the runs each worker did, and peak memory per worker (its own ``ru_maxrss``).
   ``--rounds`` repeats and reports medians.

``--database``: ``sqlite`` (a file in a temporary folder, shared by the workers),
``postgresql`` (a throwaway PostgreSQL cluster started as the tests start theirs,
``tests/pg_server.py``: Debian's ``postgresql`` package or ``initdb`` on the PATH), or a
``postgresql://`` URL of a server where the user may create databases. Each worker count gets
a fresh database (on PostgreSQL a copy of an empty template); several backends, comma-separated,
are measured side by side.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parent.parent
TESTS = REPO / "tests"


def add_arguments(parser: argparse.ArgumentParser) -> None:
    """Declare the workers sub-command's options."""
    parser.add_argument("--workers", default="1,2,4", help="worker counts, comma-separated")
    parser.add_argument("--orgs", type=int, default=20, help="orgs of the network")
    parser.add_argument("--feeds-per-org", type=int, default=3, help="feeds of each org")
    parser.add_argument(
        "--delay-ms", default="100,800", help="per-URL answer delay range, milliseconds"
    )
    parser.add_argument("--seed", type=int, default=15, help="seed of prose and delays")
    parser.add_argument("--rounds", type=int, default=1, help="repetitions (medians reported)")
    parser.add_argument(
        "--database",
        default="sqlite",
        help="sqlite, postgresql (a throwaway cluster) or a postgresql:// URL; comma-separated "
        "for several",
    )
    parser.add_argument("--json", action="store_true", help="print one JSON object")


def main(args: argparse.Namespace) -> int:
    """Run every worker count on every backend ``--rounds`` times and print the figures."""
    sys.path.insert(0, str(TESTS))
    from worker_site import SECRET_ENV, NewsNetwork, Receiver

    from feedmd.delivery import webhooks
    from feedmd.tools.fixture_server import FixtureServer

    counts = [int(n) for n in args.workers.split(",")]
    backends = [name.strip() for name in args.database.split(",")]
    low, high = (float(ms) / 1000 for ms in args.delay_ms.split(","))
    feeds = args.orgs * args.feeds_per_org
    with tempfile.TemporaryDirectory(prefix="feedmd-workers-") as folder:
        root = Path(folder)
        network = NewsNetwork(
            root / "site", args.orgs, args.feeds_per_org, delay=(low, high), seed=args.seed
        ).build()
        secret = webhooks.new_secret()
        receiver = Receiver(secret)
        stores = {name: _Databases(name, root) for name in backends}
        rounds = {name: {n: [] for n in counts} for name in backends}
        env = {**os.environ, SECRET_ENV: secret}
        try:
            with FixtureServer(root / "site") as server:
                for _ in range(args.rounds):
                    for name in backends:
                        for count in counts:
                            database = stores[name].fresh()
                            config = root / "feedmd.toml"
                            config.write_text(
                                network.config_toml(database, server.proxy_url, receiver.url)
                            )
                            rounds[name][count].append(_measure(config, count, feeds, env))
                            stores[name].drop(database)
        finally:
            receiver.stop()
            for databases in stores.values():
                databases.close()
    results = {name: _summarise(rounds[name], counts, feeds) for name in backends}
    report = {
        "feeds": feeds,
        "orgs": args.orgs,
        "entries": len(network.entries),
        "delay_ms": [low * 1000, high * 1000],
        "seed": args.seed,
        "rounds": args.rounds,
        "cpus": os.cpu_count(),
        "results": results,
    }
    if args.json:
        print(json.dumps(report, indent=2))
    else:
        for name, rows in results.items():
            for row in rows:
                print(
                    f"{name}: {row['workers']} workers: {row['feeds_per_min']:.0f} feeds/min "
                    f"(x{row['ratio']:.2f}), wall {row['wall_s']:.1f} s, "
                    f"peak {row['peak_mb_max']:.0f} MB per worker"
                )
    return 0


class _Databases:
    """Fresh databases of one backend: SQLite files in ``root``, or PostgreSQL databases on a
    throwaway cluster (``postgresql``) or on the server of a ``postgresql://`` URL."""

    def __init__(self, name: str, root: Path) -> None:
        self.name = name
        self.root = root
        self.count = 0
        self.server: Any = None
        if name == "sqlite":
            return
        if not name.startswith(("postgresql", "postgres://")):
            raise SystemExit(f"--database: sqlite, postgresql or a postgresql:// URL, not {name}")
        from pg_server import ENV, PostgresServer

        if name.startswith(("postgresql://", "postgres://")):
            os.environ[ENV] = name  # the server where fresh databases are made
        self.server = PostgresServer()

    def fresh(self) -> str:
        """A new, empty database."""
        self.count += 1
        if self.server is None:
            return str(self.root / f"bench-{self.count}.db")
        return str(self.server.fresh_database())

    def drop(self, database: str) -> None:
        """Remove a database made by ``fresh``."""
        if self.server is not None:
            self.server.drop(database)

    def close(self) -> None:
        """Stop the throwaway cluster (a named server is left running)."""
        if self.server is not None:
            self.server.stop()


def _measure(config: Path, count: int, feeds: int, env: dict[str, str]) -> dict[str, Any]:
    """Start ``count`` workers together on a fresh database; their figures."""
    command = [sys.executable, "-m", "feedmd", "worker", "--config", str(config)]
    started = time.perf_counter()
    children = [
        subprocess.Popen(
            [*command, "--once", "--json"],
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
            env=env,
        )
        for _ in range(count)
    ]
    totals = []
    for child in children:
        stdout, stderr = child.communicate(timeout=3600)
        if child.returncode != 0:
            raise SystemExit(f"a worker failed:\n{stderr}")
        totals.append(json.loads(stdout.strip().splitlines()[-1]))
    wall = time.perf_counter() - started
    ran = sum(t["feeds"] for t in totals)
    if ran != feeds:
        raise SystemExit(f"the workers ran {ran} feeds of {feeds}")
    return {
        "wall_s": wall,
        "span_s": max(t["last_run_at"] for t in totals if t["last_run_at"])
        - min(t["first_run_at"] for t in totals if t["first_run_at"]),
        "runs": sorted(t["runs"] for t in totals),
        "peak_mb": [t["max_rss_mb"] for t in totals],
    }


def _summarise(
    rounds: dict[int, list[dict[str, Any]]], counts: list[int], feeds: int
) -> list[dict[str, Any]]:
    """Medians per worker count, and the ratios to the first count."""
    results = []
    for count in counts:
        measured = rounds[count]
        span = statistics.median(m["span_s"] for m in measured)
        wall = statistics.median(m["wall_s"] for m in measured)
        results.append(
            {
                "workers": count,
                "span_s": round(span, 2),
                "wall_s": round(wall, 2),
                "runs_per_worker": measured[len(measured) // 2]["runs"],
                "peak_mb_max": max(max(m["peak_mb"]) for m in measured),
                "peak_mb_median": statistics.median(p for m in measured for p in m["peak_mb"]),
                "spans_s": [round(m["span_s"], 2) for m in measured],
            }
        )
    for row in results:
        row["feeds_per_min"] = round(60 * feeds / row["span_s"], 1)
        row["wall_feeds_per_min"] = round(60 * feeds / row["wall_s"], 1)
        row["ratio"] = round(row["feeds_per_min"] / results[0]["feeds_per_min"], 2)
        row["wall_ratio"] = round(row["wall_feeds_per_min"] / results[0]["wall_feeds_per_min"], 2)
    return results
