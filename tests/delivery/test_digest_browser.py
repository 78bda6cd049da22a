"""The HTML digest in a real browser (Debian's Chromium driven by Playwright, the session's
``browser`` of tests/conftest.py): the file `feedmd export --format html` writes opens
with one visible story per kept item, no script and no stylesheet (everything inline, as
email clients need), and a screenshot is saved in the test's folder; with
FEEDMD_UPDATE_SCREENSHOT=1 it is copied to docs/digest.png, the README's picture."""

from __future__ import annotations

import os
import shutil
import sqlite3
from pathlib import Path

from click.testing import CliRunner
from conftest import REPO, DemoStores, chromium_browser

from feedmd.cli.main import main


def test_the_digest_in_a_real_browser(tmp_path: Path, demo_stores: DemoStores) -> None:
    # events off: one story per kept item (tests/delivery/test_events_outputs.py folds events)
    database = demo_stores.copy(events=False)
    digest = tmp_path / "digest.html"
    result = CliRunner().invoke(
        main, ["export", "--db", str(database), "--format", "html", "-o", str(digest)]
    )
    assert result.exit_code == 0, result.output
    with sqlite3.connect(database) as conn:
        (kept,) = conn.execute(
            "SELECT COUNT(*) FROM items WHERE decision = 'kept'"
            " AND published_at LIKE '2026-10-12T%'"
        ).fetchone()
    with chromium_browser() as browser:
        context = browser.new_context(viewport={"width": 720, "height": 1000})
        try:
            page = context.new_page()
            page.goto(digest.as_uri())
            assert page.title() == "newsroom — Monday 12 October 2026"
            stories = page.locator("tr.story")
            assert stories.count() == kept == 38
            assert all(stories.nth(n).is_visible() for n in range(stories.count()))
            first = stories.first.get_by_role("heading", level=2)
            assert first.get_by_role("link").get_attribute("href", timeout=1000)
            assert page.evaluate("document.scripts.length") == 0
            assert page.evaluate("document.styleSheets.length") == 0
            pope = stories.filter(has_text="Pope Leo will have surgery")
            assert pope.get_by_text("Also covered by:").is_visible()
            assert pope.get_by_role("link", name="KXLT 7 News").is_visible()
            # the content column keeps to an email's width
            width = page.evaluate(
                "document.querySelector('table[width=\"640\"]').getBoundingClientRect().width"
            )
            assert width <= 640
            page.screenshot(path=tmp_path / "digest.png", full_page=False)
        finally:
            context.close()
    assert (tmp_path / "digest.png").stat().st_size > 1000
    if os.environ.get("FEEDMD_UPDATE_SCREENSHOT") == "1":
        shutil.copyfile(tmp_path / "digest.png", REPO / "docs" / "digest.png")
