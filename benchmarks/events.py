"""events: the event model's encoding throughput and the window lookup at N stored vectors.

1. Encode ``--encode`` real headlines (the UCI development file) with the bundled model and
   report headlines per second (the model is loaded first and timed apart): one pipeline
   per core as feedmd runs it, and one pipeline with the cores shared inside each batch
   (the pass before pipelines), alternated three times each, medians and their ratio;
   with ``--busy N``, N other processes spin on a core each meanwhile.
2. Store ``--stored`` vectors the way the store keeps them (``to_stored`` int8 bytes, one
   per item): real-like unit vectors, seeded, with one planted near-copy of each query so a
   lookup has something to find.
3. Time one run's lookup: ``--queries`` new vectors (20 by default, a typical run) against
   every stored vector in one blocked pass (feedmd/fingerprints/vector_scan.py), first in
   memory cut as packs are (``lookup_ms``: the arithmetic), then through a real SQLite store holding
   them in ``item_events`` and its packs (``store_lookup_ms``: read and arithmetic; then
   ``store_read_ms``: the same window only read, no arithmetic), and check both against an
   exact float32 scan of the same decoded vectors.
4. Report the whole added cost of a run with events: loading the model, encoding the
   queries' headlines and the store lookup.

``--run`` times whole ``feedmd run``s on a real store instead, events on against off
(``benchmarks/event_runs.py``).
"""

from __future__ import annotations

import argparse
import json
import resource
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from contextlib import contextmanager
from datetime import UTC, datetime, timedelta
from pathlib import Path

import numpy as np

from benchmarks import event_runs
from feedmd.fingerprints.vector_scan import blocks_of, scan_blocks
from feedmd.fingerprints.vectors import as_stored, normalise, stack_stored, to_stored
from feedmd.model.encoder import MODEL_NAME as MODEL
from feedmd.model.encoder import E5Encoder
from feedmd.store import open_store
from feedmd.store.event_packs import PACK_ITEMS as PACK_ROWS
from feedmd.timeutil import iso

REPO = Path(__file__).resolve().parent.parent
DATA = REPO / "eval" / "headlines" / "uci-dev.jsonl"
SEED = 5
K = 8
MIN_SCORE = 0.93
# each encoding mode is timed this many times, alternated; the medians are reported
ENCODE_ROUNDS = 3
NOW = datetime(2026, 12, 1, 12, 0, tzinfo=UTC)


def add_arguments(parser: argparse.ArgumentParser) -> None:
    """Declare the events sub-command's options."""
    parser.add_argument("--stored", type=int, default=100_000, help="vectors in the window")
    parser.add_argument("--queries", type=int, default=20, help="new items in the run")
    parser.add_argument("--encode", type=int, default=200, help="headlines to encode")
    parser.add_argument(
        "--busy",
        type=int,
        default=0,
        help="other processes spinning on a core each while the encodings are timed",
    )
    parser.add_argument(
        "--lookups", type=int, default=1, help="store lookups timed (median reported)"
    )
    parser.add_argument("--json", action="store_true", help="print one JSON object")
    event_runs.add_arguments(parser)


def main(args: argparse.Namespace) -> int:
    """Run the benchmark and print its figures; exit status 1 if a lookup differs from the
    exact scan (or, with ``--run``, if the event step failed)."""
    if args.child:
        db, root, number, events = args.child
        child = event_runs.child_run(Path(db), Path(root), int(number), events == "1")
        print(json.dumps(child))
        return 0
    if args.run:
        figures = event_runs.run(args)
        print(
            json.dumps(figures)
            if args.json
            else "\n".join(f"{k:>18}: {v}" for k, v in figures.items())
        )
        return 0 if figures["events_error"] is None else 1
    result = run(args.stored, args.queries, args.encode, args.lookups, args.busy)
    if args.json:
        print(json.dumps(result))
    else:
        for key, value in result.items():
            print(f"{key:>22}: {value}")
    return 0 if result["identical"] else 1


def _titles(count: int) -> list[str]:
    with DATA.open(encoding="utf-8") as lines:
        titles = [json.loads(line)["title"] for line in lines if line.strip()]
    return (titles * (count // len(titles) + 1))[:count]


def _stored(count: int, queries: np.ndarray, seed: int) -> tuple[list[int], list[str], list[bytes]]:
    """``count`` stored vectors (ids, publication times over the 47 hours before ``NOW``,
    stored bytes): seeded random unit vectors, with a noisy copy of each query planted at a
    random place."""
    rng = np.random.default_rng(seed)
    blobs: list[bytes] = []
    for start in range(0, count, 8_192):
        shape = (min(8_192, count - start), queries.shape[1])
        rows = normalise(rng.standard_normal(size=shape, dtype=np.float32))
        blobs.extend(to_stored(row) for row in rows)
    for query in queries:
        noisy = normalise(query + rng.normal(scale=0.01, size=query.shape))[0]
        blobs[int(rng.integers(count))] = to_stored(noisy)
    step = 47 * 3600 / max(count, 1)
    published = [iso(NOW - timedelta(seconds=47 * 3600 - n * step)) for n in range(count)]
    return list(range(1, count + 1)), published, blobs


def _store_lookup(
    ids: list[int], published: list[str], blobs: list[bytes], queries: np.ndarray, lookups: int
) -> tuple[float, float, float, list[list[tuple[int, float]]]]:
    """Write the vectors into a real SQLite store (``item_events`` and its packs), then time
    one run's lookup through the store's window (``EventScan``, read and compared) and one
    pass that only reads the same window, ``lookups`` times each in turn; return (seconds
    writing, median seconds of the lookup, median seconds of the read alone, the hits)."""
    with tempfile.TemporaryDirectory(prefix="feedmd-events-lookup-") as tmp:
        store = open_store(Path(tmp) / "lookup.db")
        try:
            started = time.perf_counter()
            for start in range(0, len(ids), 100_000):
                end = start + 100_000
                rows = list(
                    zip(ids[start:end], published[start:end], blobs[start:end], strict=True)
                )
                store.seed_window_vectors("bench", "bench-feed", MODEL, rows, MIN_SCORE)
            write_s = time.perf_counter() - started
            lookup_times, read_times = [], []
            for _ in range(max(1, lookups)):
                started = time.perf_counter()
                scan = store.event_scan("bench", None, NOW - timedelta(hours=48), MODEL)
                assert scan is not None
                hits = scan.hits(queries, K, MIN_SCORE)
                lookup_times.append(time.perf_counter() - started)
                started = time.perf_counter()
                again = store.event_scan("bench", None, NOW - timedelta(hours=48), MODEL)
                assert again is not None
                read = sum(len(block) for block in again._blocks())  # the read path alone
                read_times.append(time.perf_counter() - started)
                assert read == len(ids)
            lookup_s, read_s = float(np.median(lookup_times)), float(np.median(read_times))
        finally:
            store.close()
    return write_s, lookup_s, read_s, hits


@contextmanager
def _busy_processes(count: int) -> Iterator[None]:
    """``count`` other processes spinning on a core each for the block: a machine where
    other work holds cores, reproducibly (``--busy``)."""
    spinning: list[subprocess.Popen[bytes]] = []
    try:
        for _ in range(count):
            spinning.append(subprocess.Popen([sys.executable, "-c", "while True: pass"]))
        # let each interpreter start and reach its loop before the first timing
        time.sleep(0.5 if spinning else 0)
        yield
    finally:
        for process in spinning:
            process.kill()
            process.wait()


def run(
    stored: int, queries: int, encode: int, lookups: int = 1, busy: int = 0
) -> dict[str, object]:
    """The figures: encode_per_s (one pipeline per core, as feedmd runs;
    encode_one_pipeline_per_s and pipelines_speedup beside it), lookup_ms (one run's
    queries against ``stored`` vectors held in memory as packs), store_lookup_ms (the same
    through a real SQLite store: the packs read and compared; the median of ``lookups``),
    store_read_ms (the same packs only read; median), run_added_s (load + encode + store
    lookup for one run), identical (both lookups give the exact scan's items), peak_mb
    (peak RSS of the whole process: the model, the ``stored`` vectors held as bytes
    objects, the scan)."""
    started = time.perf_counter()
    encoder = E5Encoder()
    encoder.encode(["warm up"])
    load_s = time.perf_counter() - started

    titles = _titles(encode)
    timings: dict[int | None, list[float]] = {None: [], 1: []}
    with _busy_processes(busy):
        for _ in range(ENCODE_ROUNDS):  # alternated, so both modes see the same noise
            for pipelines in timings:
                encoder.pipelines = pipelines
                started = time.perf_counter()
                encoder.encode(titles)
                timings[pipelines].append(time.perf_counter() - started)
    encoder.pipelines = None
    encode_s = statistics.median(timings[None])
    one_pipeline_s = statistics.median(timings[1])

    run_titles = _titles(queries)
    started = time.perf_counter()
    vectors = as_stored(encoder.encode(run_titles))
    run_encode_s = time.perf_counter() - started

    ids, published, blobs = _stored(stored, vectors, SEED)
    started = time.perf_counter()
    found = scan_blocks(vectors, blocks_of(ids, blobs, published, PACK_ROWS), K, MIN_SCORE)
    lookup_s = time.perf_counter() - started
    write_s, store_s, read_s, from_store = _store_lookup(ids, published, blobs, vectors, lookups)

    identical = from_store == found
    exact_scores = np.concatenate(
        [stack_stored(blobs[s : s + 8_192]) @ vectors.T for s in range(0, len(blobs), 8_192)]
    )
    for column, hits in enumerate(found):
        order = np.argsort(-exact_scores[:, column], kind="stable")[:K]
        expected = [ids[i] for i in order if exact_scores[i, column] >= MIN_SCORE]
        if [h[0] for h in hits] != expected or not hits:
            identical = False
    peak_kb = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    return {
        "model": encoder.name,
        "encoded": encode,
        "busy": busy,
        "encode_per_s": round(encode / encode_s, 1),
        "encode_one_pipeline_per_s": round(encode / one_pipeline_s, 1),
        "pipelines_speedup": round(one_pipeline_s / encode_s, 2),
        "load_s": round(load_s, 3),
        "stored": stored,
        "stored_mb": round(sum(map(len, blobs)) / 1e6, 1),
        "queries": queries,
        "lookup_ms": round(lookup_s * 1000, 1),
        "lookup_ms_per_query": round(lookup_s * 1000 / max(queries, 1), 2),
        "store_lookup_ms": round(store_s * 1000, 1),
        "store_read_ms": round(read_s * 1000, 1),
        "store_write_s": round(write_s, 1),
        "run_encode_s": round(run_encode_s, 3),
        "run_added_s": round(load_s + run_encode_s + store_s, 3),
        "identical": identical,
        "peak_mb": round(peak_kb / 1024, 1),
    }
