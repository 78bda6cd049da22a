"""Seeding of the run benchmark's stores (``window.py``): N kept items of one org and
feed, published over the 47 hours before the run, cached in ``benchmarks/.cache/`` by N,
seed and ``GENERATION``.

Headlines are generated with the token distribution of real titles
(``stage1.HeadlineGenerator`` seeded per chunk of 2,000, 20% light rewrites of the chunk's
recent ones); bodies are 0.8-1.6 KB of prose drawn from the eval set's sentences,
fingerprinted in worker processes by a fast path equal to feedmd's
``scrape.fingerprint`` (TLSH, shingles; five items a chunk are checked against it); the
parent writes rows and candidate keys through ``Store.seed_items`` in bulk-load mode. The
seeded bodies keep their digest and shingles, not their text (the window never reads it).
"""

from __future__ import annotations

import json
import math
import random
import resource
import shutil
import time
from collections import deque
from concurrent.futures import Future, ProcessPoolExecutor
from datetime import UTC, datetime, timedelta
from hashlib import blake2b
from pathlib import Path
from resource import RUSAGE_CHILDREN, RUSAGE_SELF

import numpy as np
import tlsh

from benchmarks.stage1 import DEFAULT_DATA as TITLES_DATA
from benchmarks.stage1 import HeadlineGenerator, load_titles
from benchmarks.stage2 import DEFAULT_DATA as BODIES_DATA
from benchmarks.stage2 import load_sentences
from feedmd.fingerprints.shingles import _WORD, SHINGLE_WORDS
from feedmd.fingerprints.vectors import normalise, to_stored
from feedmd.model.encoder import MODEL_NAME
from feedmd.models import Entry, Page
from feedmd.settings import Settings
from feedmd.stages import stage1
from feedmd.stages.scrape import fingerprint
from feedmd.store import SeedItem, Store, open_store

CACHE = Path(__file__).resolve().parent / ".cache"
NOW = datetime(2026, 10, 12, 12, tzinfo=UTC)
ORG = FEED = "bench"
HOST = "news.bench.example"
SPAN_HOURS = 47.0
# Stored bodies: 0.8-1.6 KB of prose (log-uniform), ~130-270 words: valid TLSH digests
# (a digest needs 400 characters of prose) and ~130-270 shingles each, ~29 sampled keys.
# A run reads of a stored body only its digest, its sampled keys and, for a candidate,
# its shingles, so their size hardly changes what a run costs (benchmarks/README.md
# "Seeding": the 1M run figures on both sizes side by side), while hashing the shingles
# is most of seeding's work. Measured, seeding 100k items on 2 cores (2026-12-02):
# 1.2-2.4 KB 109.6 s (workers 144.5 CPU-s), 0.8-1.6 KB 89.2 s (98.1 CPU-s); the issue's
# 2-4 KB seeded ~1.5x slower than 1.2-2.4 KB. The eval set's bodies are larger (5th /
# 25th / 50th percentile 0.76 / 2.1 / 3.2 KB): these are its short briefs.
MIN_BYTES, MAX_BYTES = 800, 1_600
# A run's new articles keep the size they had (1.2-2.4 KB), so run figures stay
# comparable with the earlier ones.
FRESH_MIN_BYTES, FRESH_MAX_BYTES = 1_200, 2_400
# Bumped whenever the seeded material changes (sizes, generator): part of the cache's
# name, so a store of older material is never reused for a run that expects this one.
GENERATION = 2
# Words a paragraph has at least: every paragraph is then prose to ``markdown_to_prose``
# whatever it says (a line under 12 words, or a furniture-like one under 40, is dropped),
# so the fast fingerprint's prose is exactly the paragraphs.
PARAGRAPH_MIN_WORDS = 40
CHUNK = 2_000  # items generated and fingerprinted per worker task
BATCH = 20_000  # items written per transaction
# Chunks handed to the workers ahead of the writer: a batch's worth, so the workers keep
# generating while the parent writes one (with 2 x workers, ~4,000 items, they finished
# in ~5 s and waited out the rest of a ~14 s write).
AHEAD = BATCH // CHUNK + 2
SAMPLE_EVERY = 997  # stored items remembered (title, number) for rewrites and reprints


_sentences: list[str] = []


def use_sentences(sentences: list[str]) -> None:
    """The sentences articles are made of (``clean_sentences``), in this process."""
    global _sentences
    _sentences = sentences
    _split_sentences()


# ---- generated material ------------------------------------------------------------------


def clean_sentences() -> list[str]:
    """The eval set's sentences that Markdown reads as plain prose (no heading, list, table
    or link syntax), so an article's prose is exactly its paragraphs."""
    return [
        sentence
        for sentence in load_sentences(BODIES_DATA)
        if sentence[0].isupper()
        and sentence[-1] in '.!?"\u201d'
        and not any(mark in sentence for mark in "#*|>[]`_<\\")
    ]


_words: list[list[str]] = []  # the clean sentences, split on spaces
_inner: list[str] = []  # their inner words: what an article's own words are drawn from


def _own(words: list[str], rng: random.Random) -> str:
    """A sentence made this article's own: one inner word in three replaced by an inner
    word of the eval sentences. Unrelated articles then share few word 5-grams, as real
    ones do (drawing whole sentences from a pool of 3,564 made every body a shingle
    candidate of every other one)."""
    positions = range(1 + rng.randrange(3), len(words) - 1, 3)
    if not positions:
        return " ".join(words)
    words = list(words)
    for position, word in zip(positions, rng.choices(_inner, k=len(positions)), strict=True):
        words[position] = word
    return " ".join(words)


def article(key: str, sizes: tuple[int, int] = (FRESH_MIN_BYTES, FRESH_MAX_BYTES)) -> str:
    """An article of real sentences, log-uniform in ``sizes`` bytes, the same for the same
    key (a run's new one by default)."""
    if not _words:
        _split_sentences()
    rng = random.Random(key)
    target = math.exp(rng.uniform(*(math.log(size) for size in sizes)))
    paragraphs: list[str] = []
    size = 0
    while size < target:
        chosen = rng.choices(_words, k=rng.randint(1, 4))
        while sum(map(len, chosen)) < PARAGRAPH_MIN_WORDS:
            chosen += rng.choices(_words)
        paragraph = " ".join([_own(words, rng) for words in chosen])
        paragraphs.append(paragraph)
        size += len(paragraph) + 2
    return "\n\n".join(paragraphs)


def _split_sentences() -> None:
    _words[:] = [sentence.split() for sentence in _sentences]  # one line each
    _inner[:] = [word for words in _words for word in words[1:-1]] or ["news"]


def reprint(text: str, key: str) -> str:
    """A light edit of an article: a paragraph dropped or a sentence added."""
    rng = random.Random(key)
    paragraphs = text.split("\n\n")
    if len(paragraphs) > 2 and rng.random() < 0.5:
        del paragraphs[rng.randrange(len(paragraphs))]
    else:
        paragraphs.append(rng.choice(_sentences))
    return "\n\n".join(paragraphs)


def stored_text(seed: int, number: int) -> str:
    """The text of seeded item ``number`` (its body keeps only digest and shingles)."""
    return article(f"{seed}:stored:{number}", (MIN_BYTES, MAX_BYTES))


_generator: HeadlineGenerator | None = None


def _init_worker(sentences: list[str]) -> None:
    global _sentences, _generator
    _sentences = sentences
    _split_sentences()
    _generator = HeadlineGenerator(load_titles(TITLES_DATA), 0)


CHECKED_PER_CHUNK = 5  # items per chunk fingerprinted by scrape.fingerprint too (it wins)


def _fast_fingerprint(text: str) -> tuple[str | None, bytes]:
    """``scrape.fingerprint`` of a generated article (plain paragraphs), ~20x faster: the
    prose is the paragraphs one a line (what ``markdown_to_prose`` keeps of them), its
    digest ``tlsh.hash`` of it, and its shingles ``bodies.shingle_hashes`` computed with
    the 5-grams joined and hashed in C-level loops and sorted by numpy."""
    prose = "\n".join(text.split("\n\n"))
    digest = tlsh.hash(prose.encode("utf-8"))
    if not digest or digest == "TNULL":
        return None, b""
    words = [word.lower() for word in _WORD.findall(prose)]
    grams = map(" ".join, zip(*(words[i:] for i in range(SHINGLE_WORDS)), strict=False))
    joined = b"".join([blake2b(gram.encode("utf-8"), digest_size=4).digest() for gram in grams])
    values = np.unique(np.frombuffer(joined, dtype=">u4")).astype("<u4")
    return digest, values.tobytes()


def _chunk_items(task: tuple[int, int, int, int]) -> list[SeedItem]:
    """The seeded items ``start`` to ``stop``: headline, stage-1 keys, fingerprinted body.
    Headlines come from a generator seeded per chunk (its rewrites are of the chunk's
    own recent headlines)."""
    seed, start, stop, stored = task
    generator = _generator
    assert generator is not None
    generator.random.seed(f"{seed}:titles:{start}")
    generator.recent.clear()
    settings = Settings()
    items = []
    for number in range(start, stop):
        text = stored_text(seed, number)
        digest, shingles = _fast_fingerprint(text)
        if number - start < CHECKED_PER_CHUNK:
            page = Page(url_hash="x", url="", org=ORG, status="ok", markdown=text)
            done = fingerprint(page, settings)
            if (done.digest, done.shingles) != (digest, shingles):  # rare: take the real one
                digest, shingles = done.digest, done.shingles
        published = NOW - timedelta(hours=SPAN_HOURS * (1 - number / stored))
        entry = _entry(f"s/{number}", _title(generator.tokens()), published)
        candidate = stage1.prepare(entry)
        page = Page(
            url_hash=candidate.page_key,
            url=entry.url,
            org=ORG,
            status="ok",
            digest=digest,
            shingles=shingles,
            extractor="benchmark",
            no_digest_reason=None if digest else "prose too short",
        )
        items.append(SeedItem(candidate=candidate, page=page))
    return items


def _title(tokens: tuple[str, ...]) -> str:
    return " ".join(tokens).capitalize()


def _entry(key: str, title: str, published: datetime) -> Entry:
    url = f"http://{HOST}/{key}"
    return Entry(
        feed=FEED,
        org=ORG,
        entry_id=url,
        link=url,
        url=url,
        title=title,
        publisher="Bench",
        published=published,
        fetched=NOW,
    )


# ---- seeding -----------------------------------------------------------------------------


def seeded_store(stored: int, seed: int, workers: int) -> tuple[Path, float]:
    """The cached store of ``stored`` items (seeded now if missing) and the seconds seeding
    took (0 when cached). Worker processes generate and fingerprint chunks of items; this
    one writes them (rows and candidate keys, ``Store.seed_items``) in order."""
    CACHE.mkdir(exist_ok=True)
    path = CACHE / f"window-{stored}-{seed}-g{GENERATION}.db"
    if path.exists():
        return path, 0.0
    started = time.perf_counter()
    own, children = (resource.getrusage(who) for who in (RUSAGE_SELF, RUSAGE_CHILDREN))
    partial = path.with_suffix(".partial")
    for leftover in CACHE.glob(partial.name + "*"):
        leftover.unlink()
    store = open_store(partial)
    store.bulk_load_mode()
    settings = Settings()
    sample: list[tuple[int, str]] = []
    tasks = [(seed, start, min(start + CHUNK, stored), stored) for start in range(0, stored, CHUNK)]
    pending: list[SeedItem] = []
    with ProcessPoolExecutor(workers, initializer=_init_worker, initargs=(_sentences,)) as pool:
        queue: deque[Future[list[SeedItem]]] = deque()
        for task in tasks:
            queue.append(pool.submit(_chunk_items, task))
            if len(queue) > AHEAD + workers:  # bounded: the writer sets the pace
                pending += queue.popleft().result()
            if len(pending) >= BATCH:
                _write(store, pending, settings, sample)
                pending = []
        while queue:
            pending += queue.popleft().result()
        _write(store, pending, settings, sample)
    store.finish_bulk_load()  # the staged key rows into the key tables, in key order
    store.close()
    for suffix in ("-wal", "-shm"):
        Path(str(partial) + suffix).unlink(missing_ok=True)
    partial.rename(path)
    path.with_suffix(".json").write_text(json.dumps(sample))
    seconds = time.perf_counter() - started
    cost = {
        "items": stored,
        "seed_s": round(seconds, 1),
        "parent_cpu_s": round(_cpu(RUSAGE_SELF) - _cpu(own), 1),
        "workers_cpu_s": round(_cpu(RUSAGE_CHILDREN) - _cpu(children), 1),
        "workers": workers,
    }
    path.with_suffix(".seed.json").write_text(json.dumps(cost))
    return path, seconds


def _cpu(usage: int | resource.struct_rusage) -> float:
    """User + system CPU seconds of ``usage`` (or of ``getrusage(usage)`` now)."""
    if isinstance(usage, int):
        usage = resource.getrusage(usage)
    return usage.ru_utime + usage.ru_stime


def seed_cost(path: Path) -> dict[str, float]:
    """What seeding the cached store ``path`` cost (wall and CPU seconds), if recorded."""
    found = path.with_suffix(".seed.json")
    return json.loads(found.read_text()) if found.exists() else {}


def _write(
    store: Store, items: list[SeedItem], settings: Settings, sample: list[tuple[int, str]]
) -> None:
    """Store seeded items (numbered ``s/N`` in their URL), remembering every
    ``SAMPLE_EVERY``-th for the runs' rewrites and reprints."""
    if not items:
        return
    store.seed_items(items, settings, NOW)
    for item in items:
        number = int(item.candidate.entry.url.rsplit("/", 1)[1])
        if number % SAMPLE_EVERY == 0:
            sample.append((number, item.candidate.entry.title))


VECTOR_SEED = 5  # the seeded event vectors' generator
VECTOR_DIMENSIONS = 384  # multilingual-e5-small's


def with_event_vectors(seeded: Path, target: Path) -> int:
    """Copy the seeded store to ``target`` and give each kept item a stored event vector,
    as a store whose runs placed every item in an event holds; return how many.

    The vectors are seeded unit vectors in the stored form (``Store.seed_event_vectors``):
    encoding N headlines would take N / 50 s and changes nothing a lookup costs. Without
    them every run would also catch up 50 items that never got an event."""
    shutil.copyfile(seeded, target)
    store = open_store(target)
    try:
        ids = store.kept_without_event(ORG)
        rng = np.random.default_rng(VECTOR_SEED)
        for start in range(0, len(ids), 8_192):
            chunk = ids[start : start + 8_192]
            rows = normalise(
                rng.standard_normal(size=(len(chunk), VECTOR_DIMENSIONS), dtype=np.float32)
            )
            vectors = [(item_id, to_stored(row)) for item_id, row in zip(chunk, rows, strict=True)]
            store.seed_event_vectors(vectors, MODEL_NAME, Settings().event_threshold)
    finally:
        store.close()
    return len(ids)
