"""stage2: body matching against a large window, TlshIndex against stage 2's tlsh.diff loop.

1. Cut the real article bodies of the eval set (``eval/pages/truth.jsonl``) into sentences.
2. Generate a window of N synthetic articles, seeded per article (so worker processes give
   the same digests as one process): sentences drawn into paragraphs up to a length drawn
   log-uniformly from 1 to 20 KB; a share of them light edits of an earlier article
   (reprints). Each is hashed with ``tlsh.hash``, in parallel processes.
3. Load the digests, oldest first, into a ``TlshIndex``.
4. Time Q queries through ``first_within(digest, 40)``: half light edits of window articles
   (some within 40, some not), half unrelated new articles. Per-query times, median.
5. Time stage 2's loop (``tlsh.diff`` over the window in order, stop at the first within the
   threshold) on an evenly spaced sample of the queries, and compare every answer.
"""

from __future__ import annotations

import argparse
import json
import math
import os
import random
import re
import resource
import statistics
import sys
import time
from collections.abc import Sequence
from concurrent.futures import ProcessPoolExecutor
from pathlib import Path

import tlsh

from feedmd.fingerprints.tlsh_index import TlshIndex

REPO = Path(__file__).resolve().parent.parent
DEFAULT_DATA = REPO / "eval" / "pages" / "truth.jsonl"
SEED = 2
THRESHOLD = 40  # Settings.tlsh_max_distance's default
MIN_BYTES, MAX_BYTES = 1_000, 20_000
REPRINT_SHARE = 0.1  # window articles that lightly edit an earlier one
NEAR_SHARE = 0.5  # queries that lightly edit a window article
CHUNK = 5_000  # articles hashed per worker task

_sentences: list[str] = []  # set in each worker by _init_worker


def add_arguments(parser: argparse.ArgumentParser) -> None:
    """Declare the stage2 sub-command's options."""
    parser.add_argument("--window", type=int, default=100_000, help="digests in the window")
    parser.add_argument("--queries", type=int, default=2_000, help="digests to look up")
    parser.add_argument(
        "--linear-sample",
        type=int,
        default=5,
        help="queries also run through the tlsh.diff loop and compared (at least 3)",
    )
    parser.add_argument("--threshold", type=int, default=THRESHOLD, help="max TLSH distance")
    parser.add_argument("--jobs", type=int, default=os.cpu_count() or 1, help="hash processes")
    parser.add_argument("--data", type=Path, default=DEFAULT_DATA, help="real bodies (JSONL)")
    parser.add_argument("--json", action="store_true", help="print one JSON object")


def main(args: argparse.Namespace | Sequence[str] | None = None) -> int:
    """Run the benchmark and print its figures; exit status 1 if any answer differs.
    Takes run.py's parsed namespace, or an argument list when run on its own."""
    if not isinstance(args, argparse.Namespace):
        parser = argparse.ArgumentParser(prog="benchmarks/stage2.py", description=__doc__)
        add_arguments(parser)
        args = parser.parse_args(args)
    result = run(
        args.window,
        args.queries,
        max(args.linear_sample, 3),
        args.threshold,
        args.jobs,
        load_sentences(args.data),
    )
    if args.json:
        print(json.dumps(result))
    else:
        for key, value in result.items():
            print(f"{key:>16}: {value}")
    return 0 if result["identical"] else 1


def load_sentences(path: Path) -> list[str]:
    """The sentences (over 20 characters) of the eval bodies: the material of every article."""
    with path.open(encoding="utf-8") as lines:
        bodies = [json.loads(line)["body"] for line in lines if line.strip()]
    return [
        sentence
        for body in bodies
        for paragraph in body.split("\n\n")
        for sentence in re.split(r"(?<=[.!?])\s+", paragraph)
        if len(sentence) > 20
    ]


def article(sentences: list[str], key: str) -> str:
    """A fresh synthetic article, the same for the same ``key``."""
    rng = random.Random(key)
    target = math.exp(rng.uniform(math.log(MIN_BYTES), math.log(MAX_BYTES)))
    paragraphs: list[str] = []
    size = 0
    while size < target:
        paragraph = " ".join(rng.choices(sentences, k=rng.randint(1, 5)))
        paragraphs.append(paragraph)
        size += len(paragraph) + 2
    return "\n\n".join(paragraphs)


def edit(sentences: list[str], text: str, key: str) -> str:
    """A light edit of ``text``, the kind a reprint makes: words swapped, a sentence added
    at the top or bottom, a paragraph dropped, or an exact copy."""
    rng = random.Random(key)
    kind = rng.randrange(4)
    if kind == 0:
        words = text.split(" ")
        for _ in range(max(1, int(len(words) * rng.uniform(0.005, 0.05)))):
            words[rng.randrange(len(words))] = rng.choice(words)
        return " ".join(words)
    if kind == 1:
        extra = rng.choice(sentences)
        return f"{extra}\n\n{text}" if rng.random() < 0.5 else f"{text}\n\n{extra}"
    if kind == 2:
        paragraphs = text.split("\n\n")
        if len(paragraphs) > 2:
            del paragraphs[rng.randrange(len(paragraphs))]
        return "\n\n".join(paragraphs)
    return text


def window_text(sentences: list[str], number: int, seed: int) -> str:
    """Window article ``number``: fresh, or (``REPRINT_SHARE``) an edit of an earlier one."""
    rng = random.Random(f"{seed}:window:{number}")
    if number and rng.random() < REPRINT_SHARE:
        source = rng.randrange(max(0, number - 50_000), number)
        return edit(sentences, window_text(sentences, source, seed), f"{seed}:edit:{number}")
    return article(sentences, f"{seed}:fresh:{number}")


def query_text(sentences: list[str], number: int, seed: int, window: int) -> str:
    """Query ``number``: an edit of a window article (``NEAR_SHARE``) or a new article."""
    rng = random.Random(f"{seed}:query:{number}")
    if window and rng.random() < NEAR_SHARE:
        source = window_text(sentences, rng.randrange(window), seed)
        return edit(sentences, source, f"{seed}:query-edit:{number}")
    return article(sentences, f"{seed}:query-fresh:{number}")


def digest(text: str, key: str) -> str:
    """``tlsh.hash`` of the text; on ``TNULL`` (rare at 1 KB and more) a seeded fallback
    text, so every article yields a usable digest."""
    value = tlsh.hash(text.encode("utf-8"))
    attempt = 0
    while value == "TNULL":
        attempt += 1
        value = tlsh.hash(article(_sentences, f"{key}:retry:{attempt}").encode("utf-8"))
    return value


def _init_worker(sentences: list[str]) -> None:
    global _sentences
    _sentences = sentences


def _hash_chunk(task: tuple[str, int, int, int, int]) -> list[str]:
    kind, start, stop, seed, window = task
    if kind == "window":
        return [
            digest(window_text(_sentences, n, seed), f"{seed}:w{n}") for n in range(start, stop)
        ]
    return [
        digest(query_text(_sentences, n, seed, window), f"{seed}:q{n}") for n in range(start, stop)
    ]


def generate(
    sentences: list[str], kind: str, count: int, seed: int, window: int, jobs: int
) -> list[str]:
    """``count`` digests of window or query articles, hashed by ``jobs`` processes."""
    tasks = [
        (kind, start, min(start + CHUNK, count), seed, window) for start in range(0, count, CHUNK)
    ]
    if jobs <= 1:
        _init_worker(sentences)
        chunks = [_hash_chunk(task) for task in tasks]
    else:
        with ProcessPoolExecutor(jobs, initializer=_init_worker, initargs=(sentences,)) as pool:
            chunks = list(pool.map(_hash_chunk, tasks))
    return [value for chunk in chunks for value in chunk]


def linear_scan(query: str, window: list[str], threshold: int) -> tuple[int, int] | None:
    """Stage 2's loop: the first window digest within ``threshold``, with its distance."""
    for number, other in enumerate(window):
        distance = tlsh.diff(query, other)
        if distance <= threshold:
            return number, distance
    return None


def run(
    window: int,
    queries: int,
    linear_sample: int,
    threshold: int,
    jobs: int,
    sentences: list[str],
    seed: int = SEED,
) -> dict[str, object]:
    """Generate, load, time the index and the loop, compare; the figures as a dict."""
    tick = time.perf_counter()
    digests = generate(sentences, "window", window, seed, window, jobs)
    batch = generate(sentences, "query", queries, seed, window, jobs)
    generated = time.perf_counter() - tick

    tick = time.perf_counter()
    index: TlshIndex[int] = TlshIndex()
    index.extend((value, number) for number, value in enumerate(digests))
    loaded = time.perf_counter() - tick

    indexed: list[float] = []
    answers: list[tuple[int, int] | None] = []
    for query in batch:
        tick = time.perf_counter()
        answers.append(index.first_within(query, threshold))
        indexed.append(time.perf_counter() - tick)

    step = max(1, queries // linear_sample)
    sample = list(range(0, queries, step))[:linear_sample]
    linear: list[float] = []
    identical = True
    for position in sample:
        tick = time.perf_counter()
        expected = linear_scan(batch[position], digests, threshold)
        linear.append(time.perf_counter() - tick)
        identical &= expected == answers[position]
    peak_kb = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    return {
        "window": window,
        "queries": queries,
        "indexed_ms": round(statistics.median(indexed) * 1000, 3),
        "linear_ms": round(statistics.median(linear) * 1000, 1),
        "identical": identical,
        "peak_mb": round(peak_kb / 1024, 1),
        "indexed_p90_ms": round(sorted(indexed)[int(0.9 * (len(indexed) - 1))] * 1000, 3),
        "indexed_max_ms": round(max(indexed) * 1000, 3),
        "linear_max_ms": round(max(linear) * 1000, 1),  # a query matching nothing: whole window
        "linear_sample": len(sample),
        "matched_share": round(sum(answer is not None for answer in answers) / queries, 3),
        "generate_s": round(generated, 1),
        "load_s": round(loaded, 2),
        "threshold": threshold,
    }


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
