"""events --run: whole ``feedmd run``s of 20 new entries with events on and off, on a real
store whose window holds N kept items with their event vectors.

1. The store of the window benchmark (``benchmarks/window.py``: N kept items of one org
   over the 47 hours before the run, seeded once and cached), plus one stored event vector
   per item: real-like seeded unit vectors in the stored form (``Store.seed_event_vectors``;
   encoding N headlines would take N / 50 s and changes nothing the lookup costs).
2. The window benchmark's loopback site: per run a feed of ``--new`` entries (rewrites of
   stored headlines, reprints, fresh stories) with their article pages.
3. ``--runs`` pairs of real runs (``pipeline.run``, delivery off), each run in a fresh
   process as cron starts ``feedmd run`` (the model is loaded cold each time): run k with
   events on against one copy of the store, then run k with events off against another.
   Reported: the medians, their difference (``added_s``), the event step's own seconds
   (``events_step_s``, median) and the largest peak RSS of each kind.
"""

from __future__ import annotations

import argparse
import json
import resource
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from benchmarks import window, window_seed
from feedmd.settings import Settings
from feedmd.settings.config import Config, FeedConfig, OutputConfig
from feedmd.store import open_store


def add_arguments(parser: argparse.ArgumentParser) -> None:
    """The options of whole runs (``events --run``)."""
    parser.add_argument("--run", action="store_true", help="time whole runs, events on vs off")
    parser.add_argument("--new", type=int, default=20, help="new entries per run (--run)")
    parser.add_argument("--runs", type=int, default=3, help="timed pairs of runs (--run)")
    parser.add_argument("--seed", type=int, default=1, help="seed of the generated store")
    parser.add_argument("--workers", type=int, default=2, help="fingerprinting processes")
    parser.add_argument("--child", nargs=4, help=argparse.SUPPRESS)  # DB SITE RUN EVENTS


def child_run(db: Path, root: Path, run: int, events: bool) -> dict[str, Any]:
    """One real run in this fresh process: its time, steps, event counts and peak RSS."""
    from feedmd.pipeline import run as pipeline_run
    from feedmd.tools.fixture_server import FixtureServer

    server = FixtureServer(root).start()
    try:
        settings = Settings(
            fetch_timeout_seconds=20.0,
            allow_private_addresses=True,
            proxy=server.proxy_url,
            events=events,
        )
        feed = FeedConfig(
            name=window.FEED, url=f"http://{window.HOST}/feed-{run}.xml", org=window.ORG
        )
        config = Config(settings=settings, feeds=(feed,), output=OutputConfig())
        store = open_store(db)
        started = time.perf_counter()
        report = pipeline_run(store, config, window.NOW, force=True, deliver_outputs=False)
        elapsed = time.perf_counter() - started
        store.close()
    finally:
        server.stop()
    return {
        "run_s": elapsed,
        "steps": report.seconds,
        "kept": report.kept,
        "events_joined": report.events_joined,
        "events_opened": report.events_opened,
        "events_error": report.events_error,
        "peak_mb": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024,
    }


def _spawn(*args: str) -> dict[str, Any]:
    command = [sys.executable, str(Path(__file__).resolve().parent / "run.py"), "events", *args]
    done = subprocess.run(command, capture_output=True, text=True, check=False)
    if done.returncode != 0:
        raise SystemExit(f"{' '.join(command)} failed:\n{done.stderr[-3000:]}")
    return dict(json.loads(done.stdout.strip().splitlines()[-1]))


def run(args: argparse.Namespace) -> dict[str, Any]:
    """Seed (or reuse) the store, time the pairs of runs, return the figures."""
    window._sentences = window.clean_sentences()
    seeded, seed_s = window.seeded_store(args.stored, args.seed, args.workers)
    sample = [tuple(row) for row in json.loads(seeded.with_suffix(".json").read_text())]
    with tempfile.TemporaryDirectory(prefix="feedmd-events-") as tmp:
        work = Path(tmp)
        runs = {k: window.new_entries(args.seed, k, args.new, sample) for k in range(args.runs)}
        window._site(work / "root", runs)
        on_db, off_db = work / "on.db", work / "off.db"
        vectors = window_seed.with_event_vectors(seeded, on_db)
        shutil.copyfile(on_db, off_db)
        on, off = [], []
        for k in range(args.runs):
            on.append(_spawn("--child", str(on_db), str(work / "root"), str(k), "1"))
            off.append(_spawn("--child", str(off_db), str(work / "root"), str(k), "0"))
    on_s = statistics.median(r["run_s"] for r in on)
    off_s = statistics.median(r["run_s"] for r in off)
    return {
        "stored": args.stored,
        "stored_vectors": vectors,
        "new": args.new,
        "runs": args.runs,
        "events_on_run_s": round(on_s, 3),
        "events_off_run_s": round(off_s, 3),
        "added_s": round(on_s - off_s, 3),
        "events_step_s": round(statistics.median(r["steps"].get("events", 0.0) for r in on), 3),
        "events_off_step_s": round(max(r["steps"].get("events", 0.0) for r in off), 4),
        "on_runs_s": [round(r["run_s"], 3) for r in on],
        "off_runs_s": [round(r["run_s"], 3) for r in off],
        "kept": [r["kept"] for r in on],
        "events_joined": [r["events_joined"] for r in on],
        "events_error": next((r["events_error"] for r in on if r["events_error"]), None),
        "on_peak_mb": round(max(r["peak_mb"] for r in on)),
        "off_peak_mb": round(max(r["peak_mb"] for r in off)),
        "seed_s": round(seed_s, 1),
    }
