"""scrape: the real scrape step, concurrent against sequential, on a slow loopback site.

1. Serve the fixture news day's article pages (12 publishers) from the fixture server with
   ``--latency`` seconds added to every answer (50 ms by default: a far publisher).
2. Run ``pipeline.scrape_pages`` (real httpx, trafilatura, prose, TLSH) over the same pages twice
   per round: once with ``fetch_concurrency`` 1 (sequential), once with the defaults
   (8 in flight, 2 per host). Fresh store state each time: nothing is reused.
3. Report pages/s for both, their ratio (medians over ``--rounds``), and peak memory.
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import resource
import statistics
import sys
import time
from datetime import UTC, datetime
from pathlib import Path

from feedmd.models import Entry
from feedmd.pipeline import scrape_pages
from feedmd.settings import Settings
from feedmd.stages.stage1 import prepare
from feedmd.tools.fixture_server import FixtureServer

REPO = Path(__file__).resolve().parent.parent
FIXTURES = REPO / "fixtures"


def add_arguments(parser: argparse.ArgumentParser) -> None:
    """Declare the scrape sub-command's options."""
    parser.add_argument("--latency", type=float, default=0.05, help="seconds added per answer")
    parser.add_argument("--rounds", type=int, default=3, help="repetitions (medians reported)")
    parser.add_argument("--json", action="store_true", help="print one JSON object")


def _pages() -> list[str]:
    urls = []
    for path in sorted((FIXTURES / "site").rglob("*.html")):
        relative = path.relative_to(FIXTURES / "site")
        host, rest = relative.parts[0], "/".join(relative.parts[1:])
        if not host.startswith(("feeds.", "news.google.com")):
            urls.append(f"http://{host}/{rest}")
    return urls


def _survivors(urls: list[str]) -> list:
    now = datetime(2026, 10, 12, 20, tzinfo=UTC)
    return [
        prepare(
            Entry(
                feed="bench",
                org="bench",
                entry_id=url,
                link=url,
                url=url,
                title=f"page {n}",
                publisher="",
                published=now,
                fetched=now,
            )
        )
        for n, url in enumerate(urls)
    ]


def _timed(survivors: list, settings: Settings) -> float:
    started = time.perf_counter()
    pages = scrape_pages(survivors, {}, settings)
    elapsed = time.perf_counter() - started
    failed = [p for p in pages.values() if p.status == "failed"]
    if failed:
        raise SystemExit(f"{len(failed)} pages failed: {failed[0].error}")
    return len(pages) / elapsed


def main(args: argparse.Namespace) -> int:
    """Run the benchmark and print the figures."""
    survivors = _survivors(_pages())
    with FixtureServer(FIXTURES, latency_seconds=args.latency) as server:
        concurrent = Settings(proxy=server.proxy_url, allow_private_addresses=True)
        sequential = dataclasses.replace(
            concurrent, fetch_concurrency=1, fetch_concurrency_per_host=1
        )
        seq_rates, conc_rates = [], []
        for _ in range(args.rounds):
            seq_rates.append(_timed(survivors, sequential))
            conc_rates.append(_timed(survivors, concurrent))
    seq, conc = statistics.median(seq_rates), statistics.median(conc_rates)
    result = {
        "pages": len(survivors),
        "latency_ms": round(args.latency * 1000),
        "sequential_pages_per_s": round(seq, 1),
        "concurrent_pages_per_s": round(conc, 1),
        "speedup": round(conc / seq, 2),
        "concurrency": concurrent.fetch_concurrency,
        "per_host": concurrent.fetch_concurrency_per_host,
        "peak_mb": round(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024, 1),
    }
    print(json.dumps(result) if args.json else "\n".join(f"{k}: {v}" for k, v in result.items()))
    return 0


if __name__ == "__main__":  # pragma: no cover
    parser = argparse.ArgumentParser(description=__doc__)
    add_arguments(parser)
    sys.exit(main(parser.parse_args()))
