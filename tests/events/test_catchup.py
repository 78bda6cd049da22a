"""Items that missed their event are caught up (issue 19, docs/events.md "Caught up
later"): items kept while the model could not load, and items a reviewer restored with "Not
a duplicate", wait in the store and later runs with events on place them, oldest first, up
to ``event_catchup_per_run`` a run (both sides of the cap), each against the window as of
its own publication time. Real pipeline, real model, SQLite and PostgreSQL."""

from __future__ import annotations

import dataclasses
import json
from pathlib import Path
from typing import Any

import pytest
from conftest import Site, at, event_packs_in_step, make_config
from test_events_run import COUNCIL, POPE_A, POPE_B, events_by_title, one_run

from feedmd.delivery import overrides
from feedmd.pipeline import run
from feedmd.report import RunReport
from feedmd.settings.config import OutputConfig
from feedmd.store import Store, event_packs
from feedmd.tools import explain

pytestmark = pytest.mark.both_backends

# a third rewrite: cosine 0.970 with POPE_A, 0.935 with POPE_B (measured with the bundled model)
POPE_C = "Pope Leo scheduled for lung operation at Rome's Gemelli hospital"


def waiting(store: Store) -> list[str]:
    """Titles of the items waiting for an event, oldest first."""
    return [
        row[0]
        for row in store._conn.execute(
            "SELECT i.title_raw FROM event_pending p JOIN items i ON i.id = p.item_id"
            " ORDER BY p.published_at, p.item_id"
        )
    ]


def again(store: Store, site: Site, hour: int = 21, **settings: Any) -> RunReport:
    """A run of feed ``news`` that finds nothing new (its catch-up only)."""
    assert site.server is not None
    url = "http://feeds.example/news.rss"
    config = make_config([("o", "news", url)], site.server, **{"events": True, **settings})
    return run(store, config, now=at(hour), force=True)


def fail_model(tmp_path: Path) -> dict[str, Any]:
    """Settings whose model cannot load."""
    return {"event_model_path": str(tmp_path / "no-such-weights.bin")}


def test_items_kept_without_the_model_are_caught_up_by_the_next_run(
    store: Store, site: Site, tmp_path: Path
) -> None:
    report = one_run(store, site, [(POPE_A, 8), (COUNCIL, 9), (POPE_B, 10)], **fail_model(tmp_path))
    assert (report.kept, report.status, report.events_waiting) == (3, "partial", 3)
    assert "3 still waiting" in report.render()
    assert waiting(store) == [POPE_A, COUNCIL, POPE_B]
    assert events_by_title(store) == {}
    # still failing: nothing is lost, nothing decided
    report = again(store, site, **fail_model(tmp_path))
    assert (report.status, report.events_caught_up, report.events_waiting) == ("partial", 0, 3)
    # events off: nothing is caught up and the model is never loaded
    report = again(store, site, events=False, **fail_model(tmp_path))
    assert (report.status, report.events_caught_up, report.events_waiting) == ("ok", 0, 0)
    assert len(waiting(store)) == 3
    report = again(store, site)
    assert (report.status, report.events_caught_up, report.events_waiting) == ("ok", 3, 0)
    assert (report.events_joined, report.events_opened) == (0, 0)  # the run's own: none
    assert "3 earlier items caught up, 0 still waiting" in report.render()
    assert waiting(store) == []
    events = events_by_title(store)
    assert events[POPE_B]["event"] == POPE_A and events[POPE_B]["joined"] == POPE_A
    assert events[COUNCIL]["event"] == COUNCIL and events[POPE_A]["event"] == POPE_A
    assert events[POPE_B]["bytes"] == 388


def test_the_cap_bounds_each_run_and_the_oldest_come_first(
    store: Store, site: Site, tmp_path: Path
) -> None:
    one_run(store, site, [(POPE_A, 8), (COUNCIL, 9), (POPE_B, 10)], **fail_model(tmp_path))
    report = again(store, site, event_catchup_per_run=0)
    assert (report.events_caught_up, report.events_waiting) == (0, 3)
    report = again(store, site, event_catchup_per_run=2)  # below the backlog
    assert (report.events_caught_up, report.events_waiting) == (2, 1)
    assert set(events_by_title(store)) == {POPE_A, COUNCIL}
    assert waiting(store) == [POPE_B]
    report = again(store, site, event_catchup_per_run=2)  # at or above it
    assert (report.events_caught_up, report.events_waiting) == (1, 0)
    # the last one joined the event of an item caught up by the previous run
    assert events_by_title(store)[POPE_B]["event"] == POPE_A


def test_the_run_s_own_items_join_items_caught_up_in_the_same_run(
    store: Store, site: Site, tmp_path: Path
) -> None:
    one_run(store, site, [(POPE_A, 8)], **fail_model(tmp_path))
    report = one_run(store, site, [(POPE_A, 8), (POPE_B, 10)])
    assert (report.new, report.events_caught_up, report.events_joined) == (1, 1, 1)
    events = events_by_title(store)
    assert events[POPE_B]["event"] == POPE_A and events[POPE_A]["joined"] is None


def test_a_caught_up_item_sees_the_window_as_of_its_publication(
    store: Store, site: Site, tmp_path: Path
) -> None:
    # POPE_B (10h) waits; POPE_A (12h, later) is decided meanwhile and opens an event
    one_run(store, site, [(POPE_B, 10)], **fail_model(tmp_path))
    one_run(store, site, [(POPE_B, 10), (POPE_A, 12)], event_catchup_per_run=0)
    assert events_by_title(store)[POPE_A]["event"] == POPE_A
    # caught up later, POPE_B does not join an event from its future: POPE_A stays the
    # first item of its event and POPE_B opens its own
    one_run(store, site, [(POPE_B, 10), (POPE_A, 12), (POPE_C, 14)], **fail_model(tmp_path))
    assert waiting(store) == [POPE_B, POPE_C]
    report = again(store, site)
    assert (report.events_caught_up, report.events_waiting) == (2, 0)
    events = events_by_title(store)
    assert events[POPE_B]["event"] == POPE_B and events[POPE_B]["joined"] is None
    assert events[POPE_A]["event"] == POPE_A
    # POPE_C, published after POPE_A, joins it (the other side of the time bound)
    assert events[POPE_C]["joined"] == POPE_A and events[POPE_C]["event"] == POPE_A


@pytest.mark.parametrize(("hours", "joins"), [(2, False), (4, True)])
def test_a_caught_up_item_sees_only_its_own_dedup_window(
    store: Store, site: Site, tmp_path: Path, hours: int, joins: bool
) -> None:
    one_run(store, site, [(POPE_A, 8)])
    one_run(store, site, [(POPE_A, 8), (POPE_B, 11)], **fail_model(tmp_path))
    # POPE_A is 3 hours before POPE_B: outside a 2-hour window, inside a 4-hour one
    report = again(store, site, dedup_window_hours=hours)
    assert report.events_caught_up == 1
    assert events_by_title(store)[POPE_B]["event"] == (POPE_A if joins else POPE_B)


def test_a_restored_item_gets_its_event_from_the_next_run(
    store: Store, site: Site, monkeypatch: pytest.MonkeyPatch
) -> None:
    # one id a pack: the restored item's id lies in a range packed already, whose pack
    # the catch-up rebuilds in its transaction
    monkeypatch.setattr(event_packs, "PACK_ITEMS", 1)
    # the reprint of POPE_A's headline is a stage-1 duplicate: it gets no event
    one_run(store, site, [(POPE_A, 8), (POPE_A, 9), (COUNCIL, 10)])
    assert event_packs_in_step(store) == 1
    rows = store._conn.execute(
        "SELECT id, decision FROM items WHERE title_raw = ? ORDER BY published_at", (POPE_A,)
    ).fetchall()
    (first, kept), (copy, dropped) = rows
    assert (kept, dropped) == ("kept", "duplicate")
    assert store.item_event(copy) is None
    overrides.restore(store, copy, "reviewer", at(20))
    assert waiting(store) == [POPE_A]
    report = again(store, site)
    assert (report.events_caught_up, report.events_waiting) == (1, 0)
    found = store.item_event(copy)
    assert found is not None and found.event_id == first and found.joined_item_id == first
    assert event_packs_in_step(store) == 2  # the restored item's vector is packed
    trail = explain.explain(store, copy)
    assert trail is not None and trail.event is not None
    assert trail.event["members"] == [first, copy]


def test_a_restored_item_merged_again_before_its_catch_up_stops_waiting(
    store: Store, site: Site
) -> None:
    one_run(store, site, [(POPE_A, 8), (POPE_A, 9)])
    first, copy = (
        row[0]
        for row in store._conn.execute(
            "SELECT id FROM items WHERE title_raw = ? ORDER BY published_at", (POPE_A,)
        )
    )
    overrides.restore(store, copy, "reviewer", at(20))
    overrides.merge(store, copy, first, "reviewer", at(20))
    report = again(store, site)
    assert (report.events_caught_up, report.events_waiting) == (0, 0)
    assert waiting(store) == [] and store.item_event(copy) is None


def test_a_catch_up_rewrites_the_files_of_the_event(
    store: Store, site: Site, tmp_path: Path
) -> None:
    out = tmp_path / "out"
    output = OutputConfig(directory=str(out), base_url="http://feeds.test")
    one_run(store, site, [(POPE_A, 8), (POPE_A, 9)])
    first, copy = (
        row[0]
        for row in store._conn.execute(
            "SELECT id FROM items WHERE title_raw = ? ORDER BY published_at", (POPE_A,)
        )
    )
    overrides.restore(store, copy, "reviewer", at(20))
    config = dataclasses.replace(
        make_config([("o", "news", "http://feeds.example/news.rss")], site.server, events=True),
        output=output,
    )
    report = run(store, config, now=at(21), force=True)
    assert (report.new, report.events_caught_up) == (0, 1)
    items = json.loads((out / "news.json").read_text())["items"]
    assert len(items) == 2  # the restored item is listed, with the event it joined
    for item in items:
        event = item["_feedmd"]["event"]
        assert event is not None and event["size"] == 2
        assert event["id"].endswith(f":event:{first}")


def test_items_kept_while_events_were_off_are_caught_up_when_they_come_on(
    store: Store, site: Site
) -> None:
    report = one_run(store, site, [(POPE_A, 8), (COUNCIL, 9), (POPE_B, 10)], events=False)
    assert (report.kept, report.events_waiting) == (3, 0)
    assert waiting(store) == [] and events_by_title(store) == {}
    # events on: the three wait, and the cap takes the oldest first
    report = again(store, site, event_catchup_per_run=2)
    assert (report.events_caught_up, report.events_waiting) == (2, 1)
    assert set(events_by_title(store)) == {POPE_A, COUNCIL}
    report = again(store, site, event_catchup_per_run=2)
    assert (report.events_caught_up, report.events_waiting) == (1, 0)
    assert events_by_title(store)[POPE_B]["event"] == POPE_A
    report = again(store, site)  # nothing left without an event
    assert (report.events_caught_up, report.events_waiting) == (0, 0)


@pytest.mark.parametrize(("hours", "placed"), [(12, {COUNCIL}), (14, {POPE_A, COUNCIL})])
def test_only_kept_items_of_the_window_without_an_event_are_enqueued(
    store: Store, site: Site, hours: int, placed: set[str]
) -> None:
    # POPE_A (8h) is outside a 12-hour window of a run at 21h, inside a 14-hour one
    one_run(store, site, [(POPE_A, 8), (COUNCIL, 10)], events=False)
    report = again(store, site, dedup_window_hours=hours)
    assert (report.events_caught_up, report.events_waiting) == (len(placed), 0)
    assert set(events_by_title(store)) == placed


def test_items_stored_without_an_event_before_migration_0016_are_caught_up(
    store: Store, site: Site
) -> None:
    """A store whose kept items have no event row and never waited (as before 0016)."""
    one_run(store, site, [(POPE_A, 8), (POPE_B, 10)])
    with store._conn:
        store._conn.execute("DELETE FROM item_events")
        store._conn.execute("DELETE FROM event_packs")
        store._conn.execute("DELETE FROM event_checked")
    report = again(store, site)
    assert (report.events_caught_up, report.events_waiting) == (2, 0)
    assert events_by_title(store)[POPE_B]["event"] == POPE_A
