"""Events in the outputs (issue 19): the written JSON Feed and Atom files per event_mode,
the LLM bundle and the digest one entry per event, and the reviewers' "not the same
event" (split) with the outputs following it, through the review page over real HTTP.

Two orgs read the same loopback feed: org ``g`` into feed ``grouped`` (event_mode
'group'), org ``p`` into feed ``single`` ('one-per-event'). Three rewrites of one event
(A, B, C) and one other story; the real model groups the rewrites in each org."""

from __future__ import annotations

import json
import xml.etree.ElementTree as ET
from collections.abc import Iterator
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest
from conftest import FeedItemSpec, Site, article_html, at, fixture_bodies, rss
from loopback import serving

from feedmd.delivery import overrides
from feedmd.delivery.exports.export import Request, render_document, select
from feedmd.errors import OverrideError
from feedmd.pipeline import run
from feedmd.service.server import create_app
from feedmd.settings import Settings
from feedmd.settings.config import Config, FeedConfig, OutputConfig
from feedmd.store import Store
from feedmd.timeutil import utcnow

pytestmark = pytest.mark.both_backends

A = "Pope Leo to undergo lung surgery at Gemelli hospital, Vatican announces"
B = "Pope Leo will have surgery to remove a lung nodule, Vatican says"
C = "Vatican says Pope Leo will undergo surgery on his lung"
OTHER = "City council approves $48 million light-rail extension"
ATOM = "{http://www.w3.org/2005/Atom}"


@dataclass
class World:
    store: Store
    out: Path
    ids: dict[tuple[str, str], int]  # (org, title) -> item id

    def feed(self, name: str) -> dict[str, Any]:
        return dict(json.loads((self.out / f"{name}.json").read_text()))

    def items(self, name: str) -> dict[str, dict[str, Any]]:
        return {item["title"]: item for item in self.feed(name)["items"]}


@pytest.fixture
def world(store: Store, site: Site, tmp_path: Path) -> Iterator[World]:
    bodies = list(fixture_bodies().values())[12:]
    specs = []
    for n, (title, hour) in enumerate([(A, 8), (OTHER, 9), (B, 10), (C, 11)]):
        url = site.put(f"http://outlet{n}.example/story/{n}", article_html(title, bodies[n]))
        specs.append(FeedItemSpec(title, url, at(hour), publisher=f"Outlet {n}"))
    url = site.put("http://feeds.example/news.rss", rss(specs))
    server = site.start()
    out = tmp_path / "out"
    config = Config(
        settings=Settings(
            allow_private_addresses=True, proxy=server.proxy_url, fetch_timeout_seconds=5.0
        ),
        feeds=(
            FeedConfig(name="grouped", url=url, org="g", event_mode="group"),
            FeedConfig(name="single", url=url, org="p", event_mode="one-per-event"),
        ),
        output=OutputConfig(directory=str(out), base_url="http://feeds.test"),
    )
    report = run(store, config, now=at(20), force=True)
    assert (report.kept, report.events_joined) == (8, 4), report.render()
    ids = {
        (org, title): item_id
        for item_id, org, title in store._conn.execute(
            "SELECT i.id, o.name, i.title_raw FROM items i JOIN orgs o ON o.id = i.org_id"
        )
    }
    yield World(store, out, ids)


def member_titles(item: dict[str, Any]) -> list[str]:
    return [m["title"] for m in item["_feedmd"]["event"]["members"]]


def test_json_feed_carries_the_event_in_group_mode(world: World) -> None:
    items = world.items("grouped")
    assert set(items) == {A, B, C, OTHER}
    canonical = f"feedmd:g:grouped:{world.ids[('g', A)]}"
    for title in (A, B, C):
        event = items[title]["_feedmd"]["event"]
        assert event["id"] == f"feedmd:g:event:{world.ids[('g', A)]}"
        assert event["canonical"] == {"id": canonical, "url": "http://outlet0.example/story/0"}
        assert event["is_canonical"] == (title == A)
        assert event["size"] == 3
        assert member_titles(items[title]) == [t for t in (A, B, C) if t != title]
    scores = {m["title"]: m["score"] for m in items[A]["_feedmd"]["event"]["members"]}
    assert scores[B] >= 0.935 and scores[C] >= 0.935
    assert items[OTHER]["_feedmd"]["event"]["size"] == 1
    assert items[OTHER]["_feedmd"]["event"]["members"] == []


def test_one_per_event_keeps_only_the_first_item_of_each_event(world: World) -> None:
    items = world.items("single")
    assert set(items) == {A, OTHER}
    assert member_titles(items[A]) == [B, C]  # the others are still named
    # feedmd serve reads the stored event_mode too
    token = world.store.create_token("p", "reader", utcnow())
    with serving(create_app(world.store.path)) as http:
        auth = {"Authorization": f"Bearer {token}"}
        served = http.get("/feeds/single.json", headers=auth).json()
        assert [item["title"] for item in served["items"]] == [OTHER, A]
        assert http.get("/orgs/p.json", headers=auth).json()["items"][0]["title"] == C


def test_atom_links_the_other_members_as_related(world: World) -> None:
    root = ET.fromstring((world.out / "grouped.atom").read_bytes())
    related = {
        entry.findtext(f"{ATOM}title"): [
            link.get("href")
            for link in entry.findall(f"{ATOM}link")
            if link.get("rel") == "related"
        ]
        for entry in root.findall(f"{ATOM}entry")
    }
    assert related[A] == ["http://outlet2.example/story/2", "http://outlet3.example/story/3"]
    assert related[B] == ["http://outlet0.example/story/0", "http://outlet3.example/story/3"]
    assert related[OTHER] == []
    single = ET.fromstring((world.out / "single.atom").read_bytes())
    assert len(single.findall(f"{ATOM}entry")) == 2


def export(world: World, fmt: str, **options: Any) -> str:
    request = Request(fmt=fmt, feed=None, org="g", **options)
    return render_document(request, select(world.store, request), datetime.now(UTC)).decode()


def test_bundle_and_digest_have_one_entry_per_event(world: World) -> None:
    records = [json.loads(line) for line in export(world, "jsonl").splitlines()]
    assert [r["title"] for r in records] == [A, OTHER]
    assert [c["title"] for c in records[0]["also_covered_by"]] == [B, C]
    assert records[0]["event"]["size"] == 3
    assert records[1]["also_covered_by"] == []
    markdown = export(world, "markdown")
    assert markdown.count("\n---\n\n# ") == 2
    assert f'event: "feedmd:g:event:{world.ids[("g", A)]}"' in markdown
    assert 'also_covered_by:\n  - publisher: "Outlet 2"' in markdown
    digest = export(world, "digest-markdown", day=at(0))
    assert digest.count("\n## [") == 2
    assert "Also covered by: [Outlet 2](http://outlet2.example/story/2), [Outlet 3]" in digest
    html = export(world, "html", day=at(0))
    assert html.count('class="story"') == 2


def test_not_the_same_event_splits_and_the_outputs_follow(world: World) -> None:
    output = overrides.FileOutput(str(world.out), "http://feeds.test", 100)
    b = world.ids[("p", B)]
    record = overrides.split_event(world.store, b, "alice", utcnow(), output=output)
    assert (record.item_id, record.previous_event_id) == (b, world.ids[("p", A)])
    assert record.previous["joined_item_id"] in (world.ids[("p", A)], world.ids[("p", C)])
    # B is an event of its own now: the one-per-event feed shows it, A no longer names it
    items = world.items("single")
    assert set(items) == {A, B, OTHER}
    assert member_titles(items[A]) == [C]
    assert items[B]["_feedmd"]["event"]["is_canonical"]
    assert items[B]["_feedmd"]["event"]["size"] == 1
    event = world.store.item_event(b)
    assert event is not None and (event.event_id, event.joined_item_id) == (b, None)
    assert (event.split_by, event.split_from) == ("alice", world.ids[("p", A)])
    with pytest.raises(OverrideError, match="alone in its event"):
        overrides.split_event(world.store, b, "alice", utcnow())
    # the other org is untouched
    assert member_titles(world.items("grouped")[A]) == [B, C]


def test_splitting_the_canonical_gives_the_rest_a_new_one(world: World) -> None:
    output = overrides.FileOutput(str(world.out), "http://feeds.test", 100)
    overrides.split_event(world.store, world.ids[("g", A)], "bob", utcnow(), output=output)
    items = world.items("grouped")
    assert items[A]["_feedmd"]["event"]["size"] == 1
    event_b = items[B]["_feedmd"]["event"]
    assert event_b["is_canonical"] and event_b["size"] == 2
    assert member_titles(items[B]) == [C]
    assert items[C]["_feedmd"]["event"]["canonical"]["url"] == "http://outlet2.example/story/2"


def test_the_review_page_shows_the_event_and_splits_an_item(world: World) -> None:
    db_path = world.store.path
    output = overrides.FileOutput(str(world.out), "http://feeds.test", 100)
    token = world.store.create_token("g", "carol", utcnow())
    event_id, c = world.ids[("g", A)], world.ids[("g", C)]
    with serving(create_app(db_path, output=output)) as http:
        origin = {"Origin": str(http.base_url).rstrip("/")}
        # org g is private: its events need its token, to read and to correct
        assert http.get(f"/review/events/{event_id}").status_code == 401
        refused = http.post(f"/review/items/{c}/not-same-event", data={}, headers=origin)
        assert refused.status_code == 401
        signed = http.post("/review/login", data={"token": token}, headers=origin)
        assert signed.status_code == 303  # the token kept in a cookie
        page = http.get(f"/review/events/{event_id}")
        assert page.text.count("Not the same event</button>") == 3
        # the run view lists the items that joined an event (org g's only: p is private)
        run_view = http.get("/review/runs/1").text
        assert "Joined an event (2)" in run_view
        assert run_view.count('class="event-joined"') == 2
        assert f'href="/review/events/{event_id}">event {event_id}</a>' in run_view
        item_page = http.get(f"/review/items/{c}")
        assert f'href="/review/events/{event_id}"' in item_page.text
        assert "joined" in item_page.text
        done = http.post(
            f"/review/items/{c}/not-same-event", data={}, headers=origin, follow_redirects=True
        )
        assert done.status_code == 200
        assert f"now an event of its own, apart from event {event_id}" in done.text
        assert http.get(f"/review/events/{event_id}").text.count('class="member"') == 2
        assert http.get("/review/events/999999").status_code == 404
    assert member_titles(world.items("grouped")[A]) == [B]
    rows = world.store._conn.execute(
        "SELECT item_id, previous_event_id, created_by FROM event_overrides"
    )
    assert rows.fetchall() == [(c, event_id, "carol")]
