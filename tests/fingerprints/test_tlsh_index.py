"""TlshIndex and tlsh_distance answer exactly as tlsh.diff and stage 2's linear scan."""

from __future__ import annotations

import itertools
import json
import random
import re
from functools import cache

import pytest
import tlsh
from conftest import EVAL
from hypothesis import assume, given, settings
from hypothesis import strategies as st

from feedmd.fingerprints.tlsh_index import TlshIndex, decode_digest, tlsh_distance

THRESHOLDS = (0, 1, 12, 40, 100, 300)
TRUTH = EVAL / "pages" / "truth.jsonl"


@cache
def bodies() -> tuple[str, ...]:
    """Real article bodies: the checked bodies of the 111 vendored evaluation pages."""
    with TRUTH.open(encoding="utf-8") as lines:
        return tuple(json.loads(line)["body"] for line in lines if line.strip())


@cache
def sentences() -> tuple[str, ...]:
    """The bodies cut into sentences: material for varied texts."""
    return tuple(
        sentence
        for body in bodies()
        for sentence in re.split(r"(?<=[.!?>])\s+", body)
        if len(sentence) > 20
    )


def variant(rng: random.Random, text: str) -> str:
    """The text whole, truncated, or lightly edited (words swapped, a sentence added)."""
    kind = rng.randrange(4)
    if kind == 1:
        return text[: rng.randint(60, max(60, len(text)))]
    if kind == 2:
        words = text.split(" ")
        for _ in range(rng.randint(1, 1 + len(words) // 20)):
            words[rng.randrange(len(words))] = rng.choice(words)
        return " ".join(words)
    if kind == 3:
        return f"{rng.choice(sentences())} {text}"
    return text


@cache
def real_digests() -> tuple[str, ...]:
    """About 600 digests of real-looking texts of many lengths, with near-duplicates."""
    rng = random.Random(7)
    found: list[str] = []
    previous = ""
    while len(found) < 600:
        if previous and rng.random() < 0.3:  # a near-duplicate of the previous text
            text = variant(rng, previous)
        elif rng.random() < 0.5:
            text = variant(rng, rng.choice(bodies()))
        else:  # a new text from sentences, 100 bytes to 20 KB
            size = int(10 ** rng.uniform(2, 4.3))
            parts: list[str] = []
            while sum(map(len, parts)) < size:
                parts.append(rng.choice(sentences()))
            text = " ".join(parts)
        previous = text
        value = tlsh.hash(text.encode("utf-8"))
        if value != "TNULL":
            found.append(value)
    return tuple(found)


def with_bytes(digest: str, **changes: int) -> str:
    """``digest`` with header bytes replaced: checksum, length (raw), q (raw)."""
    raw = bytearray(decode_digest(digest))
    for name, position in (("checksum", 0), ("length", 1), ("q", 2)):
        if name in changes:
            raw[position] = changes[name]
    return "T1" + raw.hex().upper()


def linear_first(query: str, kept: list[tuple[str, int]], limit: int) -> tuple[int, int] | None:
    """Stage 2's loop: the first kept digest within ``limit``, with the distance."""
    for other, payload in kept:
        distance = tlsh.diff(query, other)
        if distance <= limit:
            return payload, distance
    return None


def linear_all(query: str, kept: list[tuple[str, int]], limit: int) -> list[tuple[int, int]]:
    """Every kept digest within ``limit``, in order, with the distances."""
    return [
        (payload, distance)
        for other, payload in kept
        if (distance := tlsh.diff(query, other)) <= limit
    ]


def test_distance_equals_tlsh_diff_on_2000_real_pairs() -> None:
    digests = real_digests()
    rng = random.Random(11)
    pairs = [(rng.choice(digests), rng.choice(digests)) for _ in range(2500)]
    pairs += list(itertools.pairwise(digests))  # neighbours: near-duplicates
    assert [tlsh_distance(a, b) for a, b in pairs] == [tlsh.diff(a, b) for a, b in pairs]
    assert sum(tlsh.diff(a, b) <= 40 for a, b in pairs) > 50  # close pairs were covered


def test_cyclic_wrap_of_length_and_q_ratios() -> None:
    base = real_digests()[0]
    # Length codes are stored nibble-swapped: raw 0x00 is L=0, raw 0xF0 is L=15, 0xFF L=255.
    cases = [
        (with_bytes(base, length=0x00), with_bytes(base, length=0xFF)),  # L 0 and 255: 1
        (with_bytes(base, length=0x00), with_bytes(base, length=0xEF)),  # L 0 and 254: 2
        (with_bytes(base, length=0x10), with_bytes(base, length=0xFF)),  # L 1 and 255: 2
        (with_bytes(base, length=0x00), with_bytes(base, length=0x08)),  # L 0 and 128: 128
        (with_bytes(base, length=0x0F), with_bytes(base, length=0xF0)),  # L 240 and 15
        (with_bytes(base, q=0x00), with_bytes(base, q=0xFF)),  # Q1, Q2 0 and 15: 1 each
        (with_bytes(base, q=0x0E), with_bytes(base, q=0xE1)),
        (with_bytes(base, q=0x08), with_bytes(base, q=0x80)),  # 8 apart: the farthest
        (with_bytes(base, checksum=1), with_bytes(base, checksum=2)),
    ]
    for a, b in cases:
        assert tlsh_distance(a, b) == tlsh.diff(a, b), (a, b)
    assert tlsh_distance(*cases[0]) == 1
    assert tlsh_distance(*cases[3]) == 128 * 12


@settings(max_examples=150, deadline=None)
@given(st.binary(min_size=35, max_size=35), st.binary(min_size=35, max_size=35), st.booleans())
def test_distance_equals_tlsh_diff_on_any_digest_bytes(a: bytes, b: bytes, lower: bool) -> None:
    x, y = "T1" + a.hex().upper(), "T1" + b.hex()
    if lower:
        x = "T1" + a.hex()
    assert tlsh_distance(x, y) == tlsh.diff(x, y)


texts = st.builds(
    lambda picks, tail: " ".join(picks) + tail,
    st.lists(st.sampled_from(sentences()), min_size=1, max_size=60),
    st.text(max_size=200),
)


@settings(max_examples=60, deadline=None)
@given(texts, texts, st.integers(0, 2**32))
def test_distance_equals_tlsh_diff_on_texts(first: str, second: str, seed: int) -> None:
    a = tlsh.hash(first.encode("utf-8"))
    b = tlsh.hash(variant(random.Random(seed), second).encode("utf-8"))
    assume("TNULL" not in (a, b))
    assert tlsh_distance(a, b) == tlsh.diff(a, b)


@pytest.mark.parametrize("limit", THRESHOLDS)
def test_index_answers_as_the_linear_scan(limit: int) -> None:
    digests = real_digests()
    rng = random.Random(limit)
    for _ in range(4):
        start = rng.randrange(len(digests) - 200)
        kept = [(digest, n) for n, digest in enumerate(digests[start : start + 150])]
        index: TlshIndex[int] = TlshIndex()
        for digest, payload in kept[:75]:
            index.add(digest, payload)
        index.extend(kept[75:])
        assert len(index) == 150
        queries = [*rng.sample(digests, 30), *digests[start + 150 : start + 180]]
        for query in queries:
            assert index.first_within(query, limit) == linear_first(query, kept, limit)
            assert index.within(query, limit) == linear_all(query, kept, limit)


def test_boundary_distance_is_inclusive() -> None:
    digests = real_digests()
    query = digests[0]
    for other in digests[1:200]:
        distance = tlsh.diff(query, other)
        index: TlshIndex[str] = TlshIndex()
        index.add(other, "it")
        assert index.first_within(query, distance) == ("it", distance)
        assert index.within(query, distance) == [("it", distance)]
        assert index.first_within(query, distance - 1) is None
        assert index.within(query, distance - 1) == []


def test_earliest_wins_across_length_buckets() -> None:
    base = real_digests()[3]
    farther = with_bytes(base, checksum=(decode_digest(base)[0] + 1) % 256)  # distance 1
    longer = with_bytes(base, length=_raw_length(base, +2))  # distance 24
    index: TlshIndex[str] = TlshIndex()
    index.extend([(longer, "first"), (farther, "second"), (base, "third")])
    assert index.first_within(base, 40) == ("first", 24)
    assert index.first_within(base, 23) == ("second", 1)
    assert index.within(base, 40) == [("first", 24), ("second", 1), ("third", 0)]


def _raw_length(digest: str, step: int) -> int:
    """The raw (nibble-swapped) length byte of ``digest`` moved ``step`` codes."""
    raw = decode_digest(digest)[1]
    code = (((raw & 15) << 4 | raw >> 4) + step) % 256
    return (code & 15) << 4 | code >> 4


@pytest.mark.parametrize(
    "bad",
    [
        "TNULL",
        "",
        "T1",
        "t1" + "A" * 70,
        "T1" + "A" * 69,
        "T1" + "A" * 71,
        "T1" + "G" * 70,
        "T1" + "A A" * 23 + "A",
        "A" * 70,
        b"T1" + b"A" * 70,
        None,
    ],
)
def test_bad_digests_are_refused(bad: object) -> None:
    index: TlshIndex[int] = TlshIndex()
    with pytest.raises(ValueError):
        index.add(bad, 1)  # type: ignore[arg-type]
    with pytest.raises(ValueError):
        index.extend([(real_digests()[0], 1), (bad, 2)])  # type: ignore[list-item]
    assert len(index) == 0
    index.add(real_digests()[0], 1)
    with pytest.raises(ValueError):
        index.first_within(bad, 40)  # type: ignore[arg-type]
    with pytest.raises(ValueError):
        index.within(bad, 40)  # type: ignore[arg-type]
    with pytest.raises(ValueError):
        tlsh_distance(real_digests()[0], bad)  # type: ignore[arg-type]


def test_empty_index_and_negative_limit() -> None:
    index: TlshIndex[int] = TlshIndex()
    digest = real_digests()[0]
    assert index.first_within(digest, 40) is None
    assert index.within(digest, 40) == []
    index.add(digest, 1)
    assert index.first_within(digest, 0) == (1, 0)
    assert index.first_within(digest, -1) is None
    assert index.within(digest, -1) == []
