"""`feedmd run --dry-run`: fetches and decides on a copy, stores and writes nothing."""

from __future__ import annotations

import json
import sqlite3
from pathlib import Path

from click.testing import CliRunner
from conftest import FeedItemSpec, Site, article_html, at, rss, story

from feedmd.cli.main import main

TITLE = "Pope Leo to undergo surgery for small growth on his lung"


def count(db: Path, table: str) -> int:
    conn = sqlite3.connect(db)
    try:
        return int(conn.execute(f"SELECT COUNT(*) FROM {table}").fetchone()[0])
    finally:
        conn.close()


def test_dry_run_shows_what_would_be_dropped_and_stores_nothing(site: Site, tmp_path: Path) -> None:
    first = site.put("http://four.example/pope", article_html(TITLE, story("vatican")))
    copy = site.put("http://six.example/pope", article_html(TITLE, story("rome")))
    feed = site.put(
        "http://feeds.example/a.xml",
        rss([FeedItemSpec(TITLE, first, at(9)), FeedItemSpec(TITLE + " - NBC 6", copy, at(10))]),
    )
    server = site.start()
    db, out = tmp_path / "f.db", tmp_path / "out"
    config = tmp_path / "feedmd.toml"
    config.write_text(
        f'database = "{db}"\n[output]\ndirectory = "{out}"\n[[orgs]]\n'
        f'name = "o"\n[[orgs.feeds]]\nname = "a"\nurl = "{feed}"\n'
    )
    args = [
        "run",
        "--config",
        str(config),
        "--allow-private-addresses",
        "--proxy",
        server.proxy_url,
        "--now",
        "2026-10-12T12:00:00Z",
    ]
    result = CliRunner().invoke(main, [*args, "--dry-run", "--json"])
    assert result.exit_code == 0, result.output
    report = json.loads(result.output)
    assert report["report"]["kept"] == 1
    (dropped,) = report["would_drop"]
    assert (dropped["decision"], dropped["stage"], dropped["rule"]) == (
        "duplicate",
        "stage1",
        "jaccard",
    )
    assert dropped["matched_title"] == TITLE
    assert not db.exists() and not out.exists()
    text = CliRunner().invoke(main, [*args, "--dry-run"]).output
    assert "would drop [duplicate] a:" in text and "nothing was stored" in text
    # a real run afterwards sees everything as new: the dry run stored nothing
    real = CliRunner().invoke(main, args)
    assert real.exit_code == 0 and count(db, "items") == 2
    assert (out / "a.json").exists()
    again = CliRunner().invoke(main, [*args, "--dry-run", "--force", "--json"])
    assert json.loads(again.output)["report"]["new"] == 0
    assert count(db, "runs") == 1
