"""run: whole ``feedmd run``s with 20 new entries against a store whose window holds N items.

1. Seed (``window_seed``; once per N, seed and generation, cached in
   ``benchmarks/.cache/``) N kept items of one org and feed, published over the 47 hours
   before the run: headlines generated with the token distribution of real titles
   (``stage1.HeadlineGenerator`` seeded per chunk of 2,000, 20% light rewrites of the
   chunk's recent ones), bodies of 0.8-1.6 KB prose drawn from the eval set's sentences,
   fingerprinted in worker processes by a fast path equal to feedmd's
   ``scrape.fingerprint`` (TLSH, shingles; five items a chunk are checked against it),
   rows and candidate keys written through ``Store.seed_items`` in bulk-load mode. The
   seeded bodies keep their digest and shingles, not their text (the window never reads
   it).
2. Serve, on a loopback fixture site, per run a feed of ``--new`` entries: light rewrites of
   stored headlines, reprints of stored bodies, and fresh stories of 1.2-2.4 KB, each an
   article page.
3. Time ``--runs`` real runs (``pipeline.run``: fetch, stage 1, scrape, stage 2, events,
   store; delivery off), each in a fresh process on a working copy of the seeded store
   whose items have their stored event vectors (``window_seed.with_event_vectors``: the
   steady state of a store whose runs placed every item in an event), and one
   run of the same kind against an empty store: ``run_s`` and ``empty_run_s`` (medians),
   ``peak_mb`` (the largest peak RSS of a run process), ``steps`` (seconds per step of the
   median run).
4. ``identical``: the entries of every run are decided by stages 1 and 2 both through
   the candidate keys and against the whole window, streamed in id order with the real
   rule functions (``window_check``: bounded memory at any N), on another copy; every
   decision must be equal. ``--no-check`` skips it.
"""

from __future__ import annotations

import argparse
import json
import os
import random
import resource
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from datetime import datetime, timedelta
from email.utils import format_datetime
from html import escape
from pathlib import Path
from typing import Any

from benchmarks import window_check, window_seed
from benchmarks.stage1 import DEFAULT_DATA as TITLES_DATA
from benchmarks.stage1 import HeadlineGenerator, load_titles
from benchmarks.window_seed import (
    FEED,
    HOST,
    NOW,
    ORG,
    _entry,
    _title,
    article,
    clean_sentences,
    reprint,
    stored_text,
)
from feedmd.models import Entry
from feedmd.settings import Settings
from feedmd.settings.config import Config, FeedConfig, OutputConfig
from feedmd.store import open_store

__all__ = ["FEED", "HOST", "NOW", "ORG", "clean_sentences", "new_entries", "seeded_store"]

# The sentences articles are made of: set here (event_runs.py does) or by ``run``.
_sentences: list[str] = []


def _share() -> None:
    if _sentences and window_seed._sentences is not _sentences:
        window_seed.use_sentences(_sentences)


def seeded_store(stored: int, seed: int, workers: int) -> tuple[Path, float]:
    """``window_seed.seeded_store`` with this module's sentences."""
    _share()
    return window_seed.seeded_store(stored, seed, workers)


def add_arguments(parser: argparse.ArgumentParser) -> None:
    """Declare the run sub-command's options."""
    parser.add_argument("--stored", type=int, default=10_000, help="kept items in the window")
    parser.add_argument("--new", type=int, default=20, help="new entries per run")
    parser.add_argument("--runs", type=int, default=3, help="timed runs (median reported)")
    parser.add_argument("--seed", type=int, default=1, help="seed of the generated store")
    parser.add_argument("--workers", type=int, default=2, help="fingerprinting processes")
    parser.add_argument("--no-check", action="store_true", help="skip the identical check")
    parser.add_argument("--json", action="store_true", help="print one JSON object")
    parser.add_argument("--child", nargs=3, help=argparse.SUPPRESS)  # DB SITE RUN
    parser.add_argument("--check-child", nargs=2, help=argparse.SUPPRESS)  # DB SITE


def main(args: argparse.Namespace) -> int:
    """Seed (or reuse), run, check; print the figures. Exit status 1 if a decision differs."""
    if args.child:
        print(json.dumps(_child_run(Path(args.child[0]), Path(args.child[1]), int(args.child[2]))))
        return 0
    if args.check_child:
        print(json.dumps(_check(Path(args.check_child[0]), Path(args.check_child[1]))))
        return 0
    result = run(args)
    if args.json:
        print(json.dumps(result))
    else:
        for key, value in result.items():
            print(f"{key:>12}: {value}")
    return 0 if result["identical"] in (True, None) else 1


# ---- the runs ----------------------------------------------------------------------------


def new_entries(
    seed: int, run: int, count: int, sample: list[tuple[int, str]]
) -> list[tuple[Entry, str]]:
    """The entries of one run with their article text: a third light rewrites of stored
    headlines, a fifth reprints of stored bodies under fresh headlines, the rest fresh."""
    _share()
    rng = random.Random(f"{seed}:run:{run}")
    generator = HeadlineGenerator(load_titles(TITLES_DATA), seed * 1000 + run)
    out = []
    for position in range(count):
        key = f"r{run}/{position}"
        published = NOW - timedelta(minutes=count - position)
        tokens = generator.tokens()
        text = article(f"{seed}:new:{key}")
        if sample and position % 3 == 0:
            _, title = rng.choice(sample)
            words = title.split()
            words[rng.randrange(len(words))] = tokens[0]
            title = " ".join(words)
        else:
            title = _title(tokens)
        if sample and position % 5 == 1:
            number, _ = rng.choice(sample)
            text = reprint(stored_text(seed, number), key)
        out.append((_entry(key, title, published), text))
    return out


def _site(root: Path, runs: dict[int, list[tuple[Entry, str]]]) -> None:
    for run, entries in runs.items():
        items = []
        for entry, text in entries:
            page = root / "site" / HOST / entry.url.split(f"{HOST}/", 1)[1]
            page.parent.mkdir(parents=True, exist_ok=True)
            paragraphs = "\n".join(f"<p>{escape(p)}</p>" for p in text.split("\n\n"))
            page.write_text(
                f"<!doctype html><html lang='en'><head><meta charset='utf-8'>"
                f"<title>{escape(entry.title)}</title></head><body><article>"
                f"<h1>{escape(entry.title)}</h1>{paragraphs}</article></body></html>"
            )
            items.append(
                f"<item><title>{escape(entry.title)}</title><link>{entry.url}</link>"
                f"<guid>{entry.url}</guid>"
                f"<pubDate>{format_datetime(entry.published, usegmt=True)}</pubDate></item>"
            )
        feed = root / "site" / HOST / f"feed-{run}.xml"
        feed.write_text(
            '<?xml version="1.0" encoding="UTF-8"?>\n<rss version="2.0"><channel>'
            f"<title>Bench</title><link>http://{HOST}/</link>{''.join(items)}</channel></rss>"
        )
    (root / "routes.toml").write_text("")
    (root / "runs.json").write_text(
        json.dumps(
            {
                str(run): [[e.url, e.title, e.published.isoformat(), t] for e, t in v]
                for run, v in runs.items()
            }
        )
    )


def _child_run(db: Path, root: Path, run: int) -> dict[str, Any]:
    """One real run in this (fresh) process: its time, steps and peak RSS."""
    from feedmd.pipeline import run as pipeline_run
    from feedmd.tools.fixture_server import FixtureServer

    server = FixtureServer(root).start()
    try:
        settings = Settings(
            fetch_timeout_seconds=20.0, allow_private_addresses=True, proxy=server.proxy_url
        )
        config = Config(
            settings=settings,
            feeds=(FeedConfig(name=FEED, url=f"http://{HOST}/feed-{run}.xml", org=ORG),),
            output=OutputConfig(),
        )
        store = open_store(db)
        started = time.perf_counter()
        report = pipeline_run(store, config, NOW, force=True, deliver_outputs=False)
        elapsed = time.perf_counter() - started
        store.close()
    finally:
        server.stop()
    summary = report.as_dict()
    return {
        "run_s": elapsed,
        "steps": summary.get("seconds", {}),
        "peak_mb": _peak_mb(),
        "status": summary.get("status"),
    }


def _peak_mb() -> float:
    """This process's peak RSS: ``VmHWM``, which starts again at ``exec`` (``ru_maxrss``
    keeps the parent's peak across it, so a child of the seeding process reported the
    seeder's size)."""
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith("VmHWM:"):
            return int(line.split()[1]) / 1024
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


def _spawn(*args: str) -> dict[str, Any]:
    command = [sys.executable, str(Path(__file__).resolve().parent / "run.py"), "run", *args]
    done = subprocess.run(command, capture_output=True, text=True, check=False)
    if done.returncode != 0:
        raise SystemExit(f"{' '.join(command)} failed:\n{done.stderr[-3000:]}")
    return json.loads(done.stdout.strip().splitlines()[-1])


def _check(db: Path, root: Path) -> dict[str, Any]:
    """Decide every run's entries through the keys and through the whole window, streamed
    (``window_check``)."""
    runs = json.loads((root / "runs.json").read_text())
    batches = [
        [
            (
                _entry(url.split(f"{HOST}/", 1)[1], title, datetime.fromisoformat(published)),
                text,
            )
            for url, title, published, text in rows
        ]
        for rows in runs.values()
    ]
    return window_check.check(db, batches, NOW, ORG)


def run(args: argparse.Namespace) -> dict[str, Any]:
    global _sentences
    _sentences = clean_sentences()
    seeded, seed_s = seeded_store(args.stored, args.seed, args.workers)
    sample = [tuple(row) for row in json.loads(seeded.with_suffix(".json").read_text())]
    with tempfile.TemporaryDirectory(prefix="feedmd-window-") as tmp:
        work = Path(tmp)
        runs = {k: new_entries(args.seed, k, args.new, sample) for k in range(args.runs + 1)}
        _site(work / "root", runs)
        timed = []
        db = work / "work.db"
        vectors = window_seed.with_event_vectors(seeded, db)
        for k in range(args.runs):
            timed.append(_spawn("--child", str(db), str(work / "root"), str(k)))
        empty = _spawn("--child", str(work / "empty.db"), str(work / "root"), str(args.runs))
        identical: bool | None = None
        checked = 0
        if not args.no_check:
            shutil.copyfile(seeded, db)
            verdict = _spawn("--check-child", str(db), str(work / "root"))
            identical = verdict["differing"] == 0
            checked = verdict["checked"]
    median = sorted(timed, key=lambda r: r["run_s"])[len(timed) // 2]
    return {
        "stored": args.stored,
        "stored_vectors": vectors,
        "new": args.new,
        "run_s": round(statistics.median(r["run_s"] for r in timed), 3),
        "empty_run_s": round(empty["run_s"], 3),
        "peak_mb": round(max(r["peak_mb"] for r in timed)),
        "empty_peak_mb": round(empty["peak_mb"]),
        "steps": median["steps"],
        "runs_s": [round(r["run_s"], 3) for r in timed],
        "identical": identical,
        "checked": checked,
        "seed_s": round(seed_s, 1),
        "seed_cost": window_seed.seed_cost(seeded),
        "cpus": os.cpu_count(),
    }
