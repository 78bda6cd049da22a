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

The database is SQLite in a temporary folder; every worker on one machine shares its file.
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
    parser.add_argument("--json", action="store_true", help="print one JSON object")


def main(args: argparse.Namespace) -> int:
    """Run every worker count ``--rounds`` times and print the figures."""
    sys.path.insert(0, str(TESTS))
    from worker_site import SECRET_ENV, NewsNetwork, Receiver

    from feedmd import webhooks
    from feedmd.fixture_server import FixtureServer

    counts = [int(n) for n in args.workers.split(",")]
    low, high = (float(ms) / 1000 for ms in args.delay_ms.split(","))
    feeds = args.orgs * args.feeds_per_org
    with tempfile.TemporaryDirectory(prefix="feedmd-workers-") as folder:
        root = Path(folder)
        network = NewsNetwork(
            root / "site", args.orgs, args.feeds_per_org, delay=(low, high), seed=args.seed
        ).build()
        secret = webhooks.new_secret()
        receiver = Receiver(secret)
        rounds: dict[int, list[dict[str, Any]]] = {n: [] for n in counts}
        try:
            with FixtureServer(root / "site") as server:
                for round_number in range(args.rounds):
                    for count in counts:
                        database = root / f"r{round_number}-w{count}.db"
                        config = root / f"r{round_number}-w{count}.toml"
                        config.write_text(
                            network.config_toml(str(database), server.proxy_url, receiver.url)
                        )
                        env = {**os.environ, SECRET_ENV: secret}
                        rounds[count].append(_measure(config, count, feeds, env))
        finally:
            receiver.stop()
    results = _summarise(rounds, counts, feeds)
    report = {
        "database": "sqlite",
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
        for row in results:
            print(
                f"{row['workers']} workers: {row['feeds_per_min']:.0f} feeds/min "
                f"(x{row['ratio']:.2f}), wall {row['wall_s']:.1f} s, "
                f"peak {row['peak_mb_max']:.0f} MB per worker"
            )
    return 0


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
