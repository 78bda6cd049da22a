"""What the language-free defences catch, measured on real headlines (tests/accuracy_floors.toml
[shared_blocks]): a page that reduces to one text (a consent notice nobody listed) under the
headlines of unrelated stories from unrelated hosts, against a real reprint, one body under
headlines of one story (different desks' rewrites: further apart than a syndicated copy's
headline, so a bound on what the check costs). The headlines, their hosts and their story
labels are eval/headlines/uci-dev.jsonl; the body is real-sounding prose run through the
real prose rule, TLSH and shingles; stage 1 and stage 2 decide as a run does.

Each trial places ``size`` items one minute apart; a wall trial counts the items after the
first that are dropped as reprints (wrongly: each is another story), a reprint trial the
items after the first that stage 2 keeps (wrongly: the same body). Printed with ``-s``."""

from __future__ import annotations

import dataclasses
import json
import random
import tomllib
from collections import defaultdict
from datetime import timedelta

import pytest
from conftest import REPO, at, story

from feedmd.models import Entry, Page, WindowSnapshot
from feedmd.settings import Settings
from feedmd.stages import stage1, stage2
from feedmd.stages.scrape import fingerprint

FLOORS = tomllib.loads((REPO / "tests" / "accuracy_floors.toml").read_text("utf-8"))
TRIALS = 200
BODY = story("shared-notice", 6)


def _rows() -> list[dict[str, str]]:
    path = REPO / FLOORS["shared_blocks"]["file"]
    return [json.loads(line) for line in path.read_text("utf-8").splitlines() if line.strip()]


def _decide(picked: list[dict[str, str]], settings: Settings, one_host: bool = False) -> list[str]:
    """The final decision of each picked headline, all carrying BODY, in order (on one
    host when ``one_host``: the host-furniture check's case)."""
    entries = [
        Entry(
            feed="f",
            org="o",
            entry_id=f"e{n}",
            link=f"https://paper.example/{n}" if one_host else row["url"],
            url=f"https://paper.example/{n}" if one_host else row["url"],
            title=row["title"],
            publisher=row["publisher"],
            published=at(8) + timedelta(minutes=n),
            fetched=at(12),
        )
        for n, row in enumerate(picked)
    ]
    first = stage1.decide(entries, WindowSnapshot(), [], settings, at(12))
    pages = {}
    for candidate in first.survivors:
        base = Page(
            url_hash=candidate.page_key, url="", org="o", status="ok", markdown="\n\n".join(BODY)
        )
        pages[("o", candidate.page_key)] = fingerprint(base, settings)
    second = stage2.decide(first.survivors, pages, WindowSnapshot(), settings, at(12))
    final = stage2.finalize(first, second)
    by_entry = {c.entry.entry_id: final[c.key] for c in first.candidates}
    return [by_entry[f"e{n}"].decision for n in range(len(picked))]


def _trials(size: int, same_story: bool) -> list[list[dict[str, str]]]:
    rows = _rows()
    random.seed(size * 2 + same_story)
    stories: defaultdict[str, list[dict[str, str]]] = defaultdict(list)
    for row in rows:
        stories[row["story"]].append(row)
    trials = []
    while len(trials) < TRIALS:
        if same_story:
            group = random.choice([g for g in stories.values() if len(g) >= size])
            picked = random.sample(group, size)
        else:
            picked = random.sample(rows, size)
            if len({row["story"] for row in picked}) < size:
                continue
        if len({row["publisher"] for row in picked}) == size:  # one host each
            trials.append(picked)
    return trials


def measure(size: int, settings: Settings) -> dict[str, float]:
    """Share of wrongly dropped wall items and of wrongly kept reprints at this size."""
    walls = [_decide(t, settings)[1:] for t in _trials(size, same_story=False)]
    reprints = [_decide(t, settings)[1:] for t in _trials(size, same_story=True)]
    later = TRIALS * (size - 1)
    return {
        "walls_dropped": round(sum(d.count("duplicate") for d in walls) / later, 4),
        "reprints_kept": round(sum(d.count("kept") for d in reprints) / later, 4),
    }


@pytest.mark.slow  # ~35 s: 1,200 stage-1 and stage-2 runs
def test_shared_blocks_on_real_headlines() -> None:
    floors = FLOORS["shared_blocks"]
    off = dataclasses.replace(Settings(), shared_block_min_stories=0)
    for size in (2, 3, 5):
        without, with_check = measure(size, off), measure(size, Settings())
        print(f"size {size}: without {without}, with shared blocks {with_check}")
        key = f"size_{size}"
        assert with_check["walls_dropped"] <= floors[f"{key}_max_walls_dropped"]
        assert with_check["reprints_kept"] <= floors[f"{key}_max_reprints_kept"]
        assert without["reprints_kept"] == 0.0  # the check is the only thing that keeps one
    # one host: its furniture check needs two headlines only
    no_furniture = dataclasses.replace(off, host_furniture_check=False)
    walls = _trials(2, same_story=False)
    dropped = {
        name: sum(_decide(t, chosen, one_host=True)[1] == "duplicate" for t in walls) / TRIALS
        for name, chosen in (("without", no_furniture), ("with", off))
    }
    print(f"one host, size 2: walls dropped {dropped}")
    assert dropped["without"] == 1.0
    assert dropped["with"] <= floors["one_host_size_2_max_walls_dropped"]
