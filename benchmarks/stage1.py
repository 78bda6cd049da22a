"""stage1: headline matching against a large window, TitleIndex against the brute-force scan.

1. Learn headline lengths and the token unigram distribution from real titles (the UCI
   development headlines, normalised with ``normalize_headline``).
2. Generate a window of N synthetic headlines: lengths and tokens sampled from that
   distribution, plus a share of light rewrites of recent headlines (a token dropped, added
   or replaced, two tokens prepended, or the same tokens) so that matches occur. Seeded.
3. Load the window into a ``TitleIndex`` the way stage 1 would (token counts first, then
   the headlines oldest first).
4. Time Q new headlines through the index: ``first_match``, then ``add`` when nothing
   matched (what stage 1 does with a kept entry).
5. Re-decide an evenly spaced sample of those queries by brute force (stage 1's loop over
   every kept headline, against the same index state) and compare every answer.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import random
import resource
import sys
import time
from collections import Counter, deque
from collections.abc import Iterator
from itertools import accumulate
from pathlib import Path

from feedmd.fingerprints.headlines import Headline, match_headlines, normalize_headline, simhash
from feedmd.fingerprints.title_index import TitleIndex
from feedmd.settings import Settings

REPO = Path(__file__).resolve().parent.parent
DEFAULT_DATA = REPO / "eval" / "headlines" / "uci-dev.jsonl"
FALLBACK_DATA = REPO / "fixtures" / "expected" / "scenarios.json"
SEED = 3
# Share of generated headlines that rewrite a recent one (some still fall below the
# thresholds: replacing one token of a short headline drops Jaccard under 0.6).
REWRITE_SHARE = 0.2
RECENT = 50_000  # rewrites pick their source among this many latest headlines
BRUTE_CHUNK = 50_000  # headlines rebuilt at once for the brute-force scan


def add_arguments(parser: argparse.ArgumentParser) -> None:
    """Declare the stage1 sub-command's options."""
    parser.add_argument("--window", type=int, default=100_000, help="headlines in the window")
    parser.add_argument("--queries", type=int, default=5_000, help="new headlines to decide")
    parser.add_argument(
        "--brute-sample",
        type=int,
        default=50,
        help="queries also decided by brute force and compared (at least 50)",
    )
    parser.add_argument("--data", type=Path, default=DEFAULT_DATA, help="real titles (JSONL)")
    parser.add_argument("--json", action="store_true", help="print one JSON object")


def main(args: argparse.Namespace) -> int:
    """Run the benchmark and print its figures; exit status 1 if any decision differs."""
    result = run(args.window, args.queries, max(args.brute_sample, 50), args.data)
    if args.json:
        print(json.dumps(result))
    else:
        for key, value in result.items():
            print(f"{key:>14}: {value}")
    return 0 if result["identical"] else 1


def load_titles(path: Path) -> list[str]:
    """Titles of the JSONL eval file, or of the fixture scenarios when it is missing."""
    if path.exists():
        with path.open(encoding="utf-8") as lines:
            return [json.loads(line)["title"] for line in lines if line.strip()]
    print(f"{path} not found: using the titles of {FALLBACK_DATA}", file=sys.stderr)
    return [row["title"] for row in json.loads(FALLBACK_DATA.read_text(encoding="utf-8"))]


class HeadlineGenerator:
    """Seeded synthetic headlines with the lengths and token frequencies of real ones."""

    def __init__(self, titles: list[str], seed: int = SEED) -> None:
        normalised = [tuple(dict.fromkeys(normalize_headline(title))) for title in titles]
        self.lengths = [len(tokens) for tokens in normalised if tokens]
        counts = Counter(token for tokens in normalised for token in tokens)
        self.vocabulary = list(counts)
        self.cumulative = list(accumulate(counts[token] for token in self.vocabulary))
        self.random = random.Random(seed)
        self.recent: deque[tuple[str, ...]] = deque(maxlen=RECENT)
        self._signs: dict[str, tuple[int, ...]] = {}

    def tokens(self) -> tuple[str, ...]:
        """The next headline's distinct tokens."""
        rng = self.random
        if self.recent and rng.random() < REWRITE_SHARE:
            tokens = self._rewrite(rng.choice(self.recent))
        else:
            tokens = self._fresh(rng.choice(self.lengths))
        self.recent.append(tokens)
        return tokens

    def headline(self) -> Headline:
        """The next headline, with its simhash."""
        tokens = self.tokens()
        return Headline(frozenset(tokens), self.simhash(tokens))

    def _fresh(self, length: int) -> tuple[str, ...]:
        chosen: dict[str, None] = {}
        for _ in range(4):  # a few draws may repeat a token; stop short rather than loop
            missing = length - len(chosen)
            if missing <= 0:
                break
            picks = self.random.choices(self.vocabulary, cum_weights=self.cumulative, k=missing)
            chosen.update(dict.fromkeys(picks))
        return tuple(chosen)

    def _rewrite(self, source: tuple[str, ...]) -> tuple[str, ...]:
        rng = self.random
        extra = self._fresh(2)
        tokens = list(source)
        edit = rng.randrange(5)
        if edit == 0 and len(tokens) > 1:
            del tokens[rng.randrange(len(tokens))]
        elif edit == 1:
            tokens.append(extra[0])
        elif edit == 2:
            tokens[rng.randrange(len(tokens))] = extra[0]
        elif edit == 3:
            tokens = list(extra) + tokens
        return tuple(dict.fromkeys(tokens))

    def simhash(self, tokens: tuple[str, ...]) -> int:
        """``headlines.simhash`` with each token's +-1 bit weights cached (4x faster)."""
        signs = self._signs
        rows = []
        for token in tokens:
            row = signs.get(token)
            if row is None:
                digest = hashlib.blake2b(token.encode("utf-8"), digest_size=8).digest()
                value = int.from_bytes(digest, "big")
                row = signs[token] = tuple(1 if value >> bit & 1 else -1 for bit in range(64))
            rows.append(row)
        result = 0
        for bit, count in enumerate(map(sum, zip(*rows, strict=True))):
            if count > 0:
                result |= 1 << bit
        return result


def window_headlines(titles: list[str], size: int) -> Iterator[Headline]:
    """The window, oldest first; generated on the fly so only the index holds it."""
    generator = HeadlineGenerator(titles)
    for number in range(size):
        headline = generator.headline()
        if number < 2_000 and headline.simhash != simhash(tuple(headline.tokens)):
            raise AssertionError("the cached simhash drifted from headlines.simhash")
        yield headline


def run(window: int, queries: int, brute_sample: int, data: Path) -> dict[str, object]:
    """Build the window, time the queries through the index, check a sample by brute force."""
    settings = Settings()
    titles = load_titles(data)
    started = time.perf_counter()

    # 3. Token counts first (stage 1 has the whole snapshot), then the headlines.
    counter = HeadlineGenerator(titles)
    counts = Counter(token for _ in range(window) for token in counter.tokens())
    del counter
    generator = HeadlineGenerator(titles)
    index: TitleIndex[int] = TitleIndex(settings, token_counts=counts)
    for number in range(window):
        index.add(generator.headline(), number)
    loaded = time.perf_counter() - started

    # 4. The queries continue the same stream, so some rewrite window headlines.
    batch = [generator.headline() for _ in range(queries)]
    step = max(1, queries // brute_sample)
    sampled = {position: 0 for position in range(0, queries, step)}
    answers: dict[int, tuple[int, object]] = {}
    duplicates = 0
    elapsed = 0.0
    for position, headline in enumerate(batch):
        if position in sampled:
            sampled[position] = len(index)
        tick = time.perf_counter()
        found = index.first_match(headline)
        if found is None:
            index.add(headline, window + position)
        elapsed += time.perf_counter() - tick
        duplicates += found is not None
        if position in sampled:
            answers[position] = (sampled[position], found)

    # 5. Brute force over the same state: the first ``size`` records at the query's turn.
    brute_seconds, identical = _brute_force(index, batch, answers, settings)
    peak_kb = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    return {
        "window": window,
        "queries": queries,
        "indexed_per_s": round(queries / elapsed, 1),
        "brute_per_s": round(len(answers) / brute_seconds, 2),
        "identical": identical,
        "peak_mb": round(peak_kb / 1024, 1),
        "brute_sample": len(answers),
        "duplicates": duplicates,
        "load_s": round(loaded, 1),
        "peak_source": "ru_maxrss",
    }


def _brute_force(
    index: TitleIndex[int],
    batch: list[Headline],
    answers: dict[int, tuple[int, object]],
    settings: Settings,
) -> tuple[float, bool]:
    """Stage 1's loop for each sampled query, timing only the comparisons. The kept
    headlines are rebuilt in chunks (untimed) and shared by every sampled query."""
    pending = dict.fromkeys(answers)
    results: dict[int, object] = {}
    seconds = 0.0
    records = index.records()
    start = 0
    while pending:
        chunk = [record for _, record in zip(range(BRUTE_CHUNK), records, strict=False)]
        if not chunk:
            break
        for position in list(pending):
            size = answers[position][0]
            query = batch[position]
            tick = time.perf_counter()
            found = None
            for headline, payload in chunk[: max(0, size - start)]:
                matched = match_headlines(query, headline, settings)
                if matched is not None:
                    found = (payload, matched)
                    break
            seconds += time.perf_counter() - tick
            if found is not None or size <= start + len(chunk):
                results[position] = found
                del pending[position]
        start += len(chunk)
    for position in pending:
        results[position] = None
    identical = all(results[position] == answers[position][1] for position in answers)
    return seconds, identical
