"""tlsh_scan: distances equal to tlsh.diff, and the pruned scan equal to a brute-force one."""

from __future__ import annotations

import json
import random
from functools import cache

import numpy as np
import pytest
import tlsh
from conftest import EVAL

from feedmd.fingerprints import tlsh_scan
from feedmd.fingerprints.tlsh_index import decode_digest
from feedmd.fingerprints.tlsh_scan import DigestColumns, distances, scan

TRUTH = EVAL / "pages" / "truth.jsonl"


@cache
def real_digests() -> tuple[str, ...]:
    """~800 digests of real article text: whole bodies, cuts, light edits, mixes."""
    with TRUTH.open(encoding="utf-8") as lines:
        bodies = [json.loads(line)["body"] for line in lines if line.strip()]
    rng = random.Random(5)
    found: list[str] = []
    while len(found) < 800:
        text = rng.choice(bodies)
        kind = rng.randrange(4)
        if kind == 1:
            text = text[: rng.randint(80, max(80, len(text)))]
        elif kind == 2:
            words = text.split(" ")
            for _ in range(rng.randint(1, 1 + len(words) // 15)):
                words[rng.randrange(len(words))] = rng.choice(words)
            text = " ".join(words)
        elif kind == 3:
            text = f"{text} {rng.choice(bodies)[:2000]}"
        value = tlsh.hash(text.encode("utf-8"))
        if value != "TNULL":
            found.append(value)
    return tuple(found)


def random_digests(count: int, seed: int) -> list[str]:
    """Digests of random bytes: every header value and code pattern, the ring wraps too."""
    rng = random.Random(seed)
    return ["T1" + rng.randbytes(35).hex().upper() for _ in range(count)]


def columns_of(digests: list[str]) -> DigestColumns:
    return DigestColumns.from_raw(b"".join(decode_digest(d) for d in digests))


def test_distances_equal_tlsh_diff_on_random_and_real_pairs() -> None:
    for stored, queries in (
        (random_digests(3000, 1), random_digests(8, 2)),
        (list(real_digests()), list(real_digests()[::100])),
    ):
        columns = columns_of(stored)
        for query in queries:
            expected = [tlsh.diff(query, other) for other in stored]
            assert distances(columns, query).tolist() == expected
    near = [d for d in distances(columns_of(list(real_digests())), real_digests()[0]) if d <= 40]
    assert len(near) > 1  # near-duplicates were among the real pairs


def test_columns_round_trip_through_bytes() -> None:
    columns = columns_of(list(real_digests()[:50]))
    again = DigestColumns.from_bytes(*columns.to_bytes())
    assert np.array_equal(again.heads, columns.heads)
    assert np.array_equal(again.planes, columns.planes)
    assert len(DigestColumns.concatenate([columns, again])) == 100


def brute(
    stored: list[str], query: str, radius: int, hit_limit: int, allowed: list[bool]
) -> tuple[list[tuple[int, int]], int | None, list[int]]:
    pairs = [
        (position, tlsh.diff(query, other))
        for position, other in enumerate(stored)
        if allowed[position]
    ]
    hits = [(p, d) for p, d in pairs if d <= hit_limit]
    inside = [d for _, d in pairs if d <= radius]
    closest = min(inside) if inside else None
    return hits, closest, [p for p, d in pairs if d == closest]


@pytest.mark.parametrize("block", [7, 64, 1 << 15])
def test_scan_equals_brute_force_on_both_sides_of_each_limit(
    block: int, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(tlsh_scan, "BLOCK", block)
    stored = list(real_digests())
    columns = columns_of(stored)
    rng = random.Random(block)
    queries = [rng.choice(stored) for _ in range(6)] + random_digests(2, 9)
    for query in queries:
        observed = sorted(set(distances(columns, query).tolist()))
        # limits equal to distances that occur: records sit exactly on each limit and
        # one step past it
        for hit_limit, radius in ((observed[0], observed[1]), (observed[1], observed[3])):
            for mask in (None, [rng.random() < 0.5 for _ in stored]):
                allowed = mask or [True] * len(stored)
                answer = scan(
                    columns,
                    [query],
                    radius,
                    hit_limit,
                    [None if mask is None else np.array(mask)],
                )[0]
                hits, closest, nearest = brute(stored, query, radius, hit_limit, allowed)
                assert sorted(answer.hits) == hits
                assert answer.closest == closest
                assert sorted(answer.nearest) == nearest


def test_scan_with_nothing_within_the_radius() -> None:
    stored = random_digests(200, 3)
    answer = scan(columns_of(stored), [real_digests()[0]], 10, 5, [None])[0]
    assert (answer.hits, answer.closest, answer.nearest) == ([], None, [])
    assert (
        scan(DigestColumns.from_raw(b""), [real_digests()[0]], 100, 40, [None])[0].closest is None
    )
