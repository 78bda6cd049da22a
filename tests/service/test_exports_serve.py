"""The LLM bundle and the digest over `feedmd serve`: /orgs/NAME.jsonl?since=CURSOR,
/orgs/NAME.md and /orgs/NAME/digest.html, token-protected like /orgs/NAME.json, on the
demo store served by a real uvicorn (test_serve.py's ``serving``)."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest
from conftest import DemoStores, copy_of
from loopback import serving
from stores import export, item_id

from feedmd.delivery import overrides
from feedmd.service.server import create_app
from feedmd.store import open_store
from feedmd.timeutil import utcnow

pytestmark = pytest.mark.both_backends


@pytest.fixture(scope="module")
def demo_db(demo_stores: DemoStores) -> Path:
    # events off: these tests count one export entry per kept item
    # (tests/delivery/test_events_outputs.py has the one-entry-per-event exports)
    return demo_stores.copy(events=False)


@pytest.fixture
def private(
    demo_db: Path, backend: str, tmp_path: Path, request: pytest.FixtureRequest
) -> Iterator[tuple[httpx.Client, Path | str, str]]:
    """A copy of the demo store whose org is private, served; (client, db, token)."""
    db = copy_of(request, backend, demo_db, tmp_path / "feedmd.db")
    store = open_store(db)
    try:
        store.set_public({feed.name: False for feed in store.list_feeds()})
        token = store.create_token("newsroom", "test", utcnow())
    finally:
        store.close()
    assert token is not None
    with serving(create_app(db)) as http:
        yield http, db, token


def test_jsonl_needs_the_token_and_pulls_once_with_the_cursor(
    private: tuple[httpx.Client, Path | str, str],
) -> None:
    http, db, token = private
    bearer = {"Authorization": f"Bearer {token}"}
    assert http.get("/orgs/newsroom.jsonl").status_code == 401
    assert (
        http.get("/orgs/newsroom.jsonl", headers={"Authorization": "Bearer x"}).status_code == 401
    )
    assert http.get("/orgs/nobody.jsonl", headers=bearer).status_code == 404
    first = http.get("/orgs/newsroom.jsonl", headers=bearer)
    assert first.status_code == 200
    assert first.headers["content-type"].startswith("application/jsonl")
    assert first.headers["cache-control"] == "no-store"
    # the same bytes and cursor as the CLI
    cli_out, cli_cursor = export(db, "--format", "jsonl")
    assert first.text == cli_out and first.headers["x-feedmd-cursor"] == cli_cursor
    assert len(first.text.splitlines()) == 38
    cursor = first.headers["x-feedmd-cursor"]
    again = http.get("/orgs/newsroom.jsonl", params={"since": cursor}, headers=bearer)
    assert again.status_code == 200 and again.text == ""
    assert again.headers["x-feedmd-cursor"] == cursor

    # a reviewer restores a merged copy: the next pull has it, and only it
    copy = item_id(db, "KXLT 7 News", "Pope Leo will have surgery")
    store = open_store(db)
    try:
        overrides.restore(store, copy, "tester", utcnow())
    finally:
        store.close()
    pulled = http.get("/orgs/newsroom.jsonl", params={"since": cursor}, headers=bearer)
    (record,) = [json.loads(line) for line in pulled.text.splitlines()]
    assert record["id"].endswith(f":{copy}")
    assert pulled.headers["x-feedmd-cursor"] != cursor

    bad = http.get("/orgs/newsroom.jsonl", params={"since": "nonsense"}, headers=bearer)
    assert bad.status_code == 400 and "not a feedmd cursor" in bad.json()["error"]
    paged = http.get("/orgs/newsroom.jsonl", params={"limit": "5"}, headers=bearer)
    assert len(paged.text.splitlines()) == 5
    assert http.get("/orgs/newsroom.jsonl?limit=x", headers=bearer).status_code == 400


def test_markdown_bundle_and_digest_over_http(
    private: tuple[httpx.Client, Path | str, str],
) -> None:
    http, db, token = private
    bearer = {"Authorization": f"Bearer {token}"}
    assert http.get("/orgs/newsroom/digest.html").status_code == 401
    assert http.get("/orgs/newsroom.md").status_code == 401
    digest = http.get("/orgs/newsroom/digest.html", params={"day": "2026-10-12"}, headers=bearer)
    assert digest.status_code == 200 and digest.headers["content-type"].startswith("text/html")
    assert digest.text.count('<tr class="story"') == 38
    run2 = http.get("/orgs/newsroom/digest.html", params={"run": "2"}, headers=bearer)
    assert run2.text.count('<tr class="story"') == 0
    markdown = http.get("/orgs/newsroom/digest.md", params={"run": "1"}, headers=bearer)
    assert markdown.headers["content-type"].startswith("text/markdown")
    assert markdown.text.count("\n## [") == 38
    both = http.get("/orgs/newsroom/digest.html?run=1&day=2026-10-12", headers=bearer)
    assert both.status_code == 400
    assert http.get("/orgs/newsroom/digest.html?day=12.10.", headers=bearer).status_code == 400
    bundle = http.get("/orgs/newsroom.md", headers=bearer)
    assert bundle.headers["content-type"].startswith("text/markdown")
    assert bundle.text == export(db, "--format", "markdown")[0]
    assert bundle.text.count("\n---\n\n# ") == 38


def test_a_public_org_needs_no_token(
    demo_db: Path, backend: str, tmp_path: Path, request: pytest.FixtureRequest
) -> None:
    db = copy_of(request, backend, demo_db, tmp_path / "feedmd.db")
    with serving(create_app(db)) as http:
        answer = http.get("/orgs/newsroom.jsonl")
        assert answer.status_code == 200 and len(answer.text.splitlines()) == 38
