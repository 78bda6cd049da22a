"""`feedmd replay`: stored items re-decided under other settings without fetching; the
same settings reproduce the stored decisions, and two replays agree."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from click.testing import CliRunner
from conftest import DemoStores

from feedmd.cli.main import main
from feedmd.tools.replay import recorded_settings, replay


@pytest.fixture(scope="module")
def demo_db(demo_stores: DemoStores) -> Path:
    return demo_stores.copy()


def test_the_recorded_settings_reproduce_every_stored_decision(demo_db: Path) -> None:
    assert recorded_settings(demo_db).dedup_scope == "org"  # the demo's own, from the run
    result = replay(demo_db)
    assert result.items == 48 and result.runs == 2
    assert result.changes == []


def test_since_compares_only_later_runs_with_the_window_in_place(demo_db: Path) -> None:
    from feedmd.timeutil import parse_iso

    result = replay(demo_db, {"subject_gate": False}, since=parse_iso("2026-10-12T21:00:00Z"))
    assert (result.runs, result.items) == (1, 1)
    assert result.changes == []  # the late original still matches the stored copy


def test_two_replays_with_the_same_settings_decide_identically(demo_db: Path) -> None:
    changes = {"jaccard_threshold": 0.4, "tlsh_max_distance": 80}
    first, second = replay(demo_db, changes), replay(demo_db, changes)
    assert first.decisions == second.decisions
    assert first.changes == second.changes


def test_turning_the_subject_gate_off_merges_the_templated_pairs(demo_db: Path) -> None:
    result = replay(demo_db, {"subject_gate": False})
    assert sorted(c.title for c in result.changes) == [
        "B2Gold Q3 2026 Earnings Date and Estimates",
        "UK stocks-factors to watch on October 12",
    ]
    assert {c.after["rule"] for c in result.changes} == {"jaccard"}


def test_cli_reads_a_settings_file_and_leaves_the_store_alone(
    demo_db: Path, tmp_path: Path
) -> None:
    before = demo_db.stat().st_size, _items(demo_db)
    settings = tmp_path / "stricter.toml"
    settings.write_text("tlsh_max_distance = 10\nshingle_containment_threshold = 0.99\n")
    result = CliRunner().invoke(
        main, ["replay", "--db", str(demo_db), "--settings", str(settings), "--json"]
    )
    assert result.exit_code == 0, result.output
    report = json.loads(result.output)
    assert report["changed"] == 3
    assert {c["after"]["rule"] for c in report["changes"]} == {"shingles"}
    assert (demo_db.stat().st_size, _items(demo_db)) == before


def _items(db: Path) -> int:
    import sqlite3

    conn = sqlite3.connect(db)
    try:
        return int(conn.execute("SELECT COUNT(*) FROM items").fetchone()[0])
    finally:
        conn.close()


def test_a_reviewers_override_stands_in_a_replay(demo_stores: DemoStores) -> None:
    from feedmd.delivery.overrides import restore
    from feedmd.store import connect_store
    from feedmd.timeutil import utcnow

    db_path = demo_stores.copy()
    db = connect_store(db_path)
    try:
        (item_id,) = db._conn.execute(
            "SELECT id FROM items WHERE decision = 'duplicate' AND stage = 'stage1'"
            " ORDER BY id LIMIT 1"
        ).fetchone()
        restore(db, item_id, "tester", utcnow())
    finally:
        db.close()
    result = replay(db_path)
    assert result.changes == []
