"""JSON Feed 1.1 and Atom outputs: files written by a real run, the documents checked
against a JSON Schema written from the 1.1 spec and against RFC 4287's required elements,
pagination, and `feedmd export`."""

from __future__ import annotations

import json
import xml.etree.ElementTree as ET
from pathlib import Path
from typing import Any

import feedparser
import jsonschema
import pytest
from click.testing import CliRunner
from conftest import REPO, FeedItemSpec, Site, article_html, at, make_config, rss, story

from feedmd.cli.delivery import export_command
from feedmd.delivery import render
from feedmd.pipeline import run
from feedmd.store import Store
from feedmd.store.outputs import FeedRow

pytestmark = pytest.mark.both_backends

POPE = "Pope Leo to undergo surgery for small growth on his lung"
FERRY = "Harbour council approves new ferry terminal budget"
ATOM = "{http://www.w3.org/2005/Atom}"
SCHEMA = json.loads((REPO / "tests" / "jsonfeed_schema.json").read_text())


def validate(document: dict[str, Any]) -> None:
    """Fail with the schema's message when ``document`` is not JSON Feed 1.1."""
    jsonschema.Draft202012Validator.check_schema(SCHEMA)
    jsonschema.Draft202012Validator(SCHEMA).validate(document)


def newsday(site: Site, store: Store, tmp_path: Path) -> dict[str, str]:
    """A run over one feed: an original and its copy (dropped), and a second story whose
    templated fixture prose is close enough to the first's for stage 2 to keep it marked
    'possible duplicate' (TLSH 49: 'similar', not a reprint)."""
    first = site.put("http://four.example/pope", article_html(POPE, story("vatican")))
    copy = site.put("http://six.example/pope", article_html(POPE, story("rome")))
    other = site.put("http://other.example/ferry", article_html(FERRY, story("ferry")))
    feed = site.put(
        "http://feeds.example/a.xml",
        rss(
            [
                FeedItemSpec(POPE, first, at(9), publisher="NBC4"),
                FeedItemSpec(POPE + " - NBC 6", copy, at(10), publisher="NBC 6"),
                FeedItemSpec(FERRY, other, at(11)),
            ]
        ),
    )
    server = site.start()
    out = tmp_path / "out"
    run(store, make_config([("org", "a", feed)], server), now=at(12), output_dir=str(out))
    return {"first": first, "copy": copy, "other": other, "out": str(out)}


def test_outputs_carry_full_text_and_also_published_by(
    site: Site, store: Store, tmp_path: Path
) -> None:
    urls = newsday(site, store, tmp_path)
    out = Path(urls["out"])
    document = json.loads((out / "a.json").read_text())
    validate(document)
    assert [item["title"] for item in document["items"]] == [FERRY, POPE]
    pope = document["items"][1]
    assert pope["url"] == urls["first"]
    assert pope["authors"] == [{"name": "NBC4"}]
    assert story("vatican")[0][:60] in pope["content_text"]
    assert f"<p>{story('vatican')[0][:60]}" in pope["content_html"]
    assert pope["summary"].startswith(story("vatican")[0][:40])
    assert pope["tags"] == ["a"]
    extension = pope["_feedmd"]
    also = extension["also_published_by"]
    assert [(a["publisher"], a["url"], a["rule"]) for a in also] == [
        ("NBC 6", urls["copy"], "jaccard")
    ]
    assert isinstance(also[0]["score"], float)
    assert extension["source_feed"]["name"] == "a"
    assert extension["verdict"] == {
        "tier": "different",
        "rule": None,
        "score": None,
        "possible_duplicate_of": None,
        "note": None,
    }
    assert pope["id"] == f"feedmd:org:a:{extension['canonical_item_id']}"
    assert len({item["id"] for item in document["items"]}) == 2

    parsed = feedparser.parse((out / "a.atom").read_bytes())
    assert not parsed.bozo, parsed.get("bozo_exception")
    assert parsed.version == "atom10"
    assert [entry.id for entry in parsed.entries] == [i["id"] for i in document["items"]]
    assert story("vatican")[0][:60] in parsed.entries[1].content[0].value


def test_similar_item_names_what_it_may_duplicate(site: Site, store: Store, tmp_path: Path) -> None:
    urls = newsday(site, store, tmp_path)
    document = json.loads((Path(urls["out"]) / "a.json").read_text())
    similar, pope = document["items"]
    assert similar["url"] == urls["other"]
    verdict = similar["_feedmd"]["verdict"]
    assert verdict["tier"] == "similar"
    assert verdict["rule"].startswith("similar-")
    assert verdict["possible_duplicate_of"]["id"] == pope["id"]
    assert verdict["note"] == f"possible duplicate of {POPE!r} (NBC4)"
    assert similar["tags"] == ["a", "possible-duplicate"]


def test_ids_are_stable_across_runs_and_files_are_rewritten_only_for_new_items(
    site: Site, store: Store, tmp_path: Path
) -> None:
    urls = newsday(site, store, tmp_path)
    before = json.loads((Path(urls["out"]) / "a.json").read_text())
    config = make_config([("org", "a", "http://feeds.example/a.xml")], site.server)
    again = run(store, config, now=at(13), output_dir=urls["out"], force=True)
    assert again.delivered == 0
    items = store.kept_items(feed="a")
    assert [render.item_id(item) for item in items] == [i["id"] for i in before["items"]]


def test_pages_follow_next_url_without_repeats(site: Site, store: Store, tmp_path: Path) -> None:
    newsday(site, store, tmp_path)
    feed = store.find_feed("a")
    assert feed is not None
    seen: list[str] = []
    before = None
    for _ in range(5):
        items = store.kept_items(feed="a", before=before, limit=1)
        meta = render.page_meta(render.feed_meta(feed, "http://h.example"), items, 1)
        document = render.json_feed(meta, items)
        validate(document)
        seen += [item["id"] for item in document["items"]]
        if "next_url" not in document:
            break
        assert document["next_url"].startswith("http://h.example/feeds/a.json?before=")
        before = int(document["next_url"].rsplit("=", 1)[1])
    assert len(seen) == len(set(seen)) == 2


def test_atom_has_rfc4287_required_elements(site: Site, store: Store, tmp_path: Path) -> None:
    newsday(site, store, tmp_path)
    feed = store.find_feed("a")
    assert feed is not None
    items = store.kept_items(feed="a", limit=1)
    meta = render.page_meta(render.feed_meta(feed, "http://h.example"), items, 1)
    root = ET.fromstring(render.atom_feed(meta, items))
    assert root.tag == f"{ATOM}feed"
    for name in ("id", "title", "updated"):
        assert root.find(f"{ATOM}{name}") is not None, name
    rels = {link.get("rel"): link.get("href") for link in root.findall(f"{ATOM}link")}
    assert rels["self"] == "http://h.example/feeds/a.atom"
    assert rels["next"] == f"http://h.example/feeds/a.atom?before={items[-1].item_id}"
    entries = root.findall(f"{ATOM}entry")
    assert len(entries) == 1
    for entry in entries:
        for name in ("id", "title", "updated", "published", "author/{*}name", "summary"):
            assert entry.find(f"{ATOM}{name}") is not None, name
        content = entry.find(f"{ATOM}content")
        assert content is not None and content.get("type") == "html"
        assert "<p>" in (content.text or "")
    assert not feedparser.parse(render.atom_feed(meta, items)).bozo


def test_an_empty_feed_is_still_valid(store: Store) -> None:
    feed = FeedRow("empty", "org", "", "http://feeds.example/e.xml", True)
    meta = render.feed_meta(feed, "http://h.example")
    validate(render.json_feed(meta, []))
    parsed = feedparser.parse(render.atom_feed(meta, []))
    assert not parsed.bozo and parsed.feed.title == "empty"
    assert render.atom_feed(meta, []) == render.atom_feed(meta, [])  # stable ETag


@pytest.mark.parametrize(
    "markdown",
    ["<script>alert(1)</script>", '<img src=x onerror="alert(1)">', "[x](javascript:alert(1))"],
)
def test_raw_html_from_pages_is_escaped(markdown: str) -> None:
    rendered = render.render_html(markdown)
    assert "<script" not in rendered and "<img" not in rendered
    assert 'href="javascript' not in rendered


def test_export_writes_json_and_atom(site: Site, store: Store, tmp_path: Path) -> None:
    newsday(site, store, tmp_path)
    db = store.path
    runner = CliRunner()
    out = tmp_path / "export.json"
    result = runner.invoke(export_command, ["--feed", "a", "-o", str(out), "--db", db])
    assert result.exit_code == 0, result.output
    document = json.loads(out.read_text())
    validate(document)
    # written to a file: its own link is the file, served at --base-url
    assert document["feed_url"] == "http://localhost:8000/export.json"
    assert len(document["items"]) == 2

    atom = runner.invoke(export_command, ["--format", "atom", "--org", "org", "--db", db])
    assert atom.exit_code == 0, atom.output
    parsed = feedparser.parse(atom.stdout_bytes)
    assert not parsed.bozo and len(parsed.entries) == 2
    assert parsed.feed.links[0].href == "http://localhost:8000/orgs/org.atom"

    single = runner.invoke(export_command, ["--db", db, "--limit", "1"])
    assert single.exit_code == 0
    assert "next_url" in json.loads(single.stdout)


def test_export_names_what_is_wrong(site: Site, store: Store, tmp_path: Path) -> None:
    newsday(site, store, tmp_path)
    db = store.path
    runner = CliRunner()
    missing = runner.invoke(export_command, ["--feed", "nope", "--db", db])
    assert missing.exit_code == 1 and "no feed named 'nope'" in missing.output
    both = runner.invoke(export_command, ["--feed", "a", "--org", "org", "--db", db])
    assert both.exit_code == 2
    nodb = runner.invoke(export_command, ["--db", str(tmp_path / "none.db")])
    assert nodb.exit_code == 1 and "no such database" in nodb.output
