"""The review page in a real browser: Debian's Chromium driven by Playwright for Python.

A person's path through it, by mouse and keyboard: open the runs page, sign in with the
org's token (corrections need one, even on a public org), open run 1, open a cluster from
the keyboard, press "Not a duplicate" on a demo merge, and see the item back in the feed's
JSON Feed. Each page's screenshot is saved in the test's output folder
(``tmp_path``); with FEEDMD_UPDATE_SCREENSHOT=1 the runs page's is copied to
docs/review.png, the README's picture.

Playwright's own browser download cannot run here, so the test drives the system Chromium
(``executable_path``); without it the test fails saying how to install it
(scripts/test installs it; the playwright package comes with the test extra).
"""

from __future__ import annotations

import json
import os
import re
import shutil
from pathlib import Path

from conftest import REPO, DemoStores, chromium_browser
from loopback import serving
from playwright.sync_api import Page
from stores import item_id

from feedmd.service.server import create_app
from feedmd.store import open_store
from feedmd.timeutil import utcnow


def unlabelled_controls(page: Page) -> int:
    """Form controls a screen reader could not name (no label, aria-label or text)."""
    return int(
        page.eval_on_selector_all(
            "input:not([type=hidden]), button, select, textarea",
            "els => els.filter(e => !(e.labels && e.labels.length)"
            " && !e.getAttribute('aria-label') && !e.textContent.trim()).length",
        )
    )


def test_not_a_duplicate_in_a_real_browser(tmp_path: Path, demo_stores: DemoStores) -> None:
    database = demo_stores.copy()
    copy = item_id(database, "KXLT 7 News", "Pope Leo will have surgery")
    db = open_store(database)
    token = db.create_token("newsroom", "reviewer", utcnow())
    db.close()
    assert token is not None
    reprint = item_id(database, "ByteLedger", "Amazon eyes Decart")
    canonical_id = item_id(database, "Continental Press", "Amazon in talks to acquire")
    shots = tmp_path / "screenshots"
    shots.mkdir()
    with serving(create_app(database)) as http, chromium_browser() as browser:
        base = str(http.base_url).rstrip("/")
        context = browser.new_context(viewport={"width": 1280, "height": 800})
        try:
            page = context.new_page()

            # the runs page: counts, timings and the chart; the skip link comes first
            page.goto(f"{base}/review")
            assert page.get_by_role("heading", name="Runs").is_visible()
            assert page.get_by_role("img", name=re.compile("kept, 8 dropped")).is_visible()
            assert unlabelled_controls(page) == 0
            page.screenshot(path=shots / "runs.png", full_page=True)
            page.keyboard.press("Tab")
            assert page.evaluate("document.activeElement.textContent") == "Skip to content"

            # sign in: the token goes into an HttpOnly cookie
            page.goto(f"{base}/review/login?next=/review")
            page.get_by_label("Org token").fill(token)
            page.get_by_role("button", name="Sign in").click()
            page.wait_for_url(re.compile(r"/review\?notice=signed-in"))
            assert "Signed in to newsroom as reviewer" in page.inner_text("body")

            # a run: its clusters are open on arrival, the page's purpose in sight
            page.get_by_role("link", name="Run 1", exact=True).click()
            page.wait_for_url(f"{base}/review/runs/1")
            cluster = page.locator("details.cluster", has_text="Pope Leo will have surgery")
            assert cluster.get_attribute("open") is not None
            assert cluster.get_by_role("table").is_visible()
            canonical = cluster.get_by_role("row").filter(has_text="canonical")
            assert "possible duplicate" in canonical.inner_text()
            # and still fold from the keyboard
            cluster.locator("summary").focus()
            page.keyboard.press("Enter")
            assert cluster.get_attribute("open") is None
            page.keyboard.press("Enter")
            assert unlabelled_controls(page) == 0
            page.screenshot(path=shots / "run.png", full_page=True)

            # "Not a duplicate" on the KXLT copy: back to the run, with a status message
            cluster.get_by_role(
                "button", name=re.compile(f"^Not a duplicate: restore item {copy},")
            ).click()
            page.wait_for_url(re.compile(r"/review/runs/1\?notice=restored"))
            assert "is back in its feed" in page.get_by_role("status").inner_text()
            page.screenshot(path=shots / "run-after.png", full_page=True)

            # a stage-2 merge: both bodies side by side, the shared passages marked
            page.goto(f"{base}/review/items/{reprint}")
            bodies = page.locator(".bodies")
            assert bodies.is_visible()
            assert bodies.locator("mark").count() >= 2
            assert page.get_by_role("link", name=f"item {canonical_id}").first.is_visible()
            page.screenshot(path=shots / "reprint.png", full_page=True)

            # the item's trail records the override
            page.goto(f"{base}/review/items/{copy}")
            assert page.get_by_role("heading", name="Overrides").is_visible()
            assert unlabelled_controls(page) == 0
            page.screenshot(path=shots / "item.png", full_page=True)

            # and the item is back in the JSON Feed
            response = page.goto(f"{base}/feeds/pope-leo.json")
            assert response is not None and response.ok
            document = json.loads(response.text())
            ids = [item["_feedmd"]["canonical_item_id"] for item in document["items"]]
            assert copy in ids
            page.screenshot(path=shots / "feed.png")
        finally:
            context.close()

    for name in ("runs", "run", "run-after", "reprint", "item", "feed"):
        assert (shots / f"{name}.png").stat().st_size > 1000
    if os.environ.get("FEEDMD_UPDATE_SCREENSHOT") == "1":
        shutil.copyfile(shots / "runs.png", REPO / "docs" / "review.png")
