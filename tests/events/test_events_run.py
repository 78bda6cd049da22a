"""Events in runs (issue 19): the real pipeline on a loopback site, the real model and a
real SQLite store. A run groups two rewrites of one event and keeps other events apart
(both sides of event_threshold), the vetoes apply, a later run joins the stored window,
a failed model load keeps the items, events=false never loads the model, explain shows
the decision. Outputs and the review correction: tests/delivery/test_events_outputs.py."""

from __future__ import annotations

import zlib
from datetime import timedelta
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from conftest import (
    FeedItemSpec,
    Site,
    article_html,
    at,
    event_packs_in_step,
    fixture_bodies,
    make_config,
    rss,
)

from feedmd.events import E5Encoder, MemoryWindow
from feedmd.events.grouper import MAX_CANDIDATES
from feedmd.fingerprints.vectors import as_stored
from feedmd.pipeline import run
from feedmd.report import RunReport
from feedmd.store import Store, event_packs
from feedmd.store.events import EventScan
from feedmd.tools import explain

pytestmark = pytest.mark.both_backends

# Two rewrites of one event (cosine 0.953 under the bundled model), another event, and a
# templated pair of different events that only the subject veto keeps apart (0.953).
POPE_A = "Pope Leo to undergo lung surgery at Gemelli hospital, Vatican announces"
POPE_B = "Pope Leo will have surgery to remove a lung nodule, Vatican says"
COUNCIL = "City council approves $48 million light-rail extension"
KOREAN_A = "어드밴트, 온디바이스 AI 서비스 실증·확산 사업 참여"
KOREAN_B = "엠젠솔루션, 온디바이스 AI 서비스 실증·확산 사업 참여"
# Distinct real prose for the articles (the fixture day's, past its Pope Leo stories,
# whose bodies are alike on purpose).
BODIES = list(fixture_bodies().values())[12:]
# measured once with the bundled model (see the module docstring)
POPE_COSINE = 0.953


def publish(site: Site, feed: str, titles: list[tuple[str, int]]) -> str:
    """Serve an RSS feed of ``titles`` (title, hour), each linking a distinct article."""
    specs = []
    for n, (title, hour) in enumerate(titles):
        url = f"http://news{n}.example/{feed}/{zlib.crc32(title.encode())}"
        site.put(url, article_html(title, BODIES[n]))
        specs.append(FeedItemSpec(title, url, at(hour), publisher=f"Outlet {n}"))
    return site.put(f"http://feeds.example/{feed}.rss", rss(specs))


def one_run(store: Store, site: Site, titles: list[tuple[str, int]], **settings: Any) -> RunReport:
    """One run of feed ``news`` (org ``o``) serving ``titles``."""
    url = publish(site, "news", titles)
    if site.server is None:
        site.start()
    assert site.server is not None
    config = make_config([("o", "news", url)], site.server, **{"events": True, **settings})
    return run(store, config, now=at(20), force=True)


def events_by_title(store: Store) -> dict[str, dict[str, Any]]:
    """{title: its event row, with the event's and the joined item's titles}."""
    rows = store._conn.execute(
        "SELECT i.title_raw, c.title_raw, j.title_raw, e.score, e.threshold, e.model,"
        " e.veto, length(e.vector) FROM item_events e JOIN items i ON i.id = e.item_id"
        " JOIN items c ON c.id = e.event_id LEFT JOIN items j ON j.id = e.joined_item_id"
    ).fetchall()
    keys = ("event", "joined", "score", "threshold", "model", "veto", "bytes")
    return {row[0]: dict(zip(keys, row[1:], strict=True)) for row in rows}


def test_a_run_groups_two_rewrites_and_keeps_other_events_apart(store: Store, site: Site) -> None:
    titles = [(POPE_A, 8), (KOREAN_A, 9), (POPE_B, 10), (COUNCIL, 11), (KOREAN_B, 12)]
    report = one_run(store, site, titles)
    assert report.kept == 5
    assert (report.events_joined, report.events_opened, report.events_error) == (1, 4, None)
    events = events_by_title(store)
    assert events[POPE_B]["event"] == POPE_A
    assert events[POPE_B]["joined"] == POPE_A
    assert events[POPE_B]["score"] == pytest.approx(POPE_COSINE, abs=0.003)
    assert events[POPE_B]["threshold"] == 0.935
    assert events[POPE_B]["model"] == E5Encoder.name
    assert events[POPE_B]["bytes"] == 388
    for alone in (POPE_A, COUNCIL, KOREAN_A):
        assert events[alone]["event"] == alone
        assert events[alone]["joined"] is None
    # the subject veto keeps the templated pair apart, and says which item it refused
    korean = events[KOREAN_B]
    assert korean["event"] == KOREAN_B
    assert korean["veto"].startswith("different subjects")
    assert korean["score"] >= korean["threshold"]
    assert "nearest item" in korean["veto"]


def test_a_threshold_above_the_pair_keeps_the_rewrites_apart(store: Store, site: Site) -> None:
    report = one_run(store, site, [(POPE_A, 8), (POPE_B, 10)], event_threshold=0.96)
    assert (report.events_joined, report.events_opened) == (0, 2)
    events = events_by_title(store)
    assert events[POPE_B]["event"] == POPE_B
    # the nearest item's cosine, below the threshold that kept it apart
    assert events[POPE_B]["threshold"] == 0.96
    assert events[POPE_B]["score"] == pytest.approx(POPE_COSINE, abs=0.003)
    # and explain says so
    (item_id,) = store._conn.execute(
        "SELECT id FROM items WHERE title_raw = ?", (POPE_B,)
    ).fetchone()
    trail = explain.explain(store, item_id)
    assert trail is not None
    assert f"opened it: nearest cosine {events[POPE_B]['score']:g} < its threshold 0.96" in (
        explain.render(trail)
    )


def test_without_the_subject_gate_the_templated_pair_is_grouped(store: Store, site: Site) -> None:
    one_run(store, site, [(KOREAN_A, 9), (KOREAN_B, 12)], subject_gate=False)
    assert events_by_title(store)[KOREAN_B]["event"] == KOREAN_A


@pytest.mark.parametrize("pack_items", [1, event_packs.PACK_ITEMS])
def test_a_later_run_joins_the_event_of_a_stored_item(
    store: Store, site: Site, pack_items: int, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The same decisions whether the stored window is read from packs (one id a pack:
    every earlier vector packed) or row by row (the default size: the newest range)."""
    monkeypatch.setattr(event_packs, "PACK_ITEMS", pack_items)
    one_run(store, site, [(POPE_A, 8), (COUNCIL, 9)])
    assert event_packs_in_step(store) == (1 if pack_items == 1 else 0)
    publish(site, "news", [(POPE_A, 8), (COUNCIL, 9), (POPE_B, 10)])
    assert site.server is not None
    url = "http://feeds.example/news.rss"
    config = make_config([("o", "news", url)], site.server, events=True)
    report = run(store, config, now=at(21), force=True)
    assert (report.new, report.events_joined) == (1, 1)
    assert events_by_title(store)[POPE_B]["event"] == POPE_A
    assert events_by_title(store)[POPE_B]["score"] == pytest.approx(POPE_COSINE, abs=0.003)
    event_packs_in_step(store)
    # past the window, the stored item is not a candidate any more
    later = make_config([("o", "news", url)], site.server, events=True, dedup_window_hours=1)
    publish(site, "news", [(POPE_B.replace("says", "said"), 22)])
    report = run(store, later, now=at(23), force=True)
    assert (report.new, report.events_joined) == (1, 0)
    # "Not the same event": POPE_B leaves POPE_A's event; a third rewrite (cosine 0.970
    # with POPE_A) still joins POPE_A through the packs
    pope_b = store._conn.execute("SELECT id FROM items WHERE title_raw = ?", (POPE_B,)).fetchone()
    store.split_event(int(pope_b[0]), "tester", at(23))
    event_packs_in_step(store)
    assert events_by_title(store)[POPE_B]["event"] == POPE_B
    pope_c = "Pope Leo scheduled for lung operation at Rome's Gemelli hospital"
    publish(site, "news", [(pope_c, 12)])
    report = run(store, config, now=at(23, 30), force=True)
    assert (report.new, report.kept, report.events_joined) == (1, 1, 1)
    assert events_by_title(store)[pope_c]["event"] == POPE_A
    event_packs_in_step(store)


def test_the_store_window_streams_blocks_and_matches_an_exact_scan(
    store: Store, site: Site
) -> None:
    titles = [(f"{t} {n}", 1 + n) for n, t in enumerate([POPE_A, COUNCIL, KOREAN_A, POPE_B])]
    one_run(store, site, titles)
    vectors = E5Encoder().encode([POPE_B, COUNCIL, "Vatican says Pope Leo will have surgery"])
    queries = as_stored(vectors)
    scan = store.event_scan("o", None, at(0), E5Encoder.name)
    assert isinstance(scan, EventScan)
    small = EventScan(scan._conn, scan._org_id, None, at(0), E5Encoder.name)
    small.prepare(queries, MAX_CANDIDATES, 0.5)
    assert small.rows_read == 4  # every stored vector compared
    exact = MemoryWindow()
    for item_id, event_id, title, blob in store._conn.execute(
        "SELECT e.item_id, e.event_id, i.title_raw, e.vector FROM item_events e"
        " JOIN items i ON i.id = e.item_id"
    ):
        stored = np.frombuffer(blob[4:], dtype=np.int8).astype(np.float32)
        exact.add(str(item_id), str(event_id), title, stored * np.frombuffer(blob[:4], "<f4")[0])
    for query in queries:
        streamed, scanned = small.nearest(query, 8, 0.5), exact.nearest(query, 8, 0.5)
        assert [n.item_id for n in streamed] == [n.item_id for n in scanned]
        assert [n.score for n in streamed] == pytest.approx([n.score for n in scanned], abs=1e-5)
        assert [n.event_id for n in streamed] == [n.event_id for n in scanned]
    # another org's window and a later cutoff hold nothing
    assert store.event_scan("nobody", None, at(0), E5Encoder.name) is None
    empty = store.event_scan("o", None, at(20) + timedelta(hours=1), E5Encoder.name)
    assert empty is not None
    empty.prepare(queries, 8, 0.0)
    assert empty.rows_read == 0


def test_a_model_that_cannot_load_keeps_the_items_without_an_event(
    store: Store, site: Site, tmp_path: Path
) -> None:
    missing = str(tmp_path / "no-such-weights.bin")
    report = one_run(store, site, [(POPE_A, 8), (POPE_B, 10)], event_model_path=missing)
    assert report.kept == 2
    assert report.status == "partial" and report.exit_code == 3
    assert report.events_error is not None and "not found" in report.events_error
    assert "events error" in report.render()
    assert events_by_title(store) == {}


def test_events_off_never_loads_the_model(store: Store, site: Site, tmp_path: Path) -> None:
    # the weight path does not exist: loading the model would fail and say so
    missing = str(tmp_path / "no-such-weights.bin")
    report = one_run(
        store, site, [(POPE_A, 8), (POPE_B, 10)], events=False, event_model_path=missing
    )
    assert (report.kept, report.status, report.events_error) == (2, "ok", None)
    assert (report.events_joined, report.events_opened) == (0, 0)
    assert events_by_title(store) == {}


def test_explain_shows_the_event_decision(store: Store, site: Site) -> None:
    one_run(store, site, [(POPE_A, 8), (POPE_B, 10), (KOREAN_A, 11), (KOREAN_B, 12)])
    ids = {
        title: item_id for item_id, title in store._conn.execute("SELECT id, title_raw FROM items")
    }
    trail = explain.explain(store, ids[POPE_B])
    assert trail is not None and trail.event is not None
    assert trail.event["event_id"] == ids[POPE_A]
    assert trail.event["joined_item_id"] == ids[POPE_A]
    assert trail.event["threshold"] == 0.935
    assert trail.event["model"] == E5Encoder.name
    assert trail.event["members"] == [ids[POPE_A], ids[POPE_B]]
    text = explain.render(trail)
    assert f"event {ids[POPE_A]}: joined item {ids[POPE_A]} at cosine 0.95" in text
    assert "threshold 0.935" in text
    assert f"kept items of the event (2): [{ids[POPE_A]}, {ids[POPE_B]}]" in text
    vetoed = explain.render(explain.explain(store, ids[KOREAN_B]))  # type: ignore[arg-type]
    assert f"event {ids[KOREAN_B]}: opened it" in vetoed and "different subjects" in vetoed
    assert f"nearest item {ids[KOREAN_A]}" in vetoed
    assert explain.explain(store, ids[POPE_A]).as_dict()["event"]["canonical"]  # type: ignore[union-attr]
