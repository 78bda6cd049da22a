"""JSON Feed 1.1 and Atom files written by a real run."""

from __future__ import annotations

import json
from pathlib import Path

import feedparser
from conftest import FeedItemSpec, Site, article_html, at, make_config, rss, story

from feedmd.pipeline import run
from feedmd.stages.store import Store

POPE = "Pope Leo to undergo surgery for small growth on his lung"


def test_outputs_carry_full_text_and_also_published_by(
    site: Site, store: Store, tmp_path: Path
) -> None:
    first = site.put("http://four.example/pope", article_html(POPE, story("vatican")))
    copy = site.put("http://six.example/pope", article_html(POPE, story("rome")))
    other = site.put("http://other.example/ferry", article_html("Ferry", story("ferry")))
    feed = site.put(
        "http://feeds.example/a.xml",
        rss(
            [
                FeedItemSpec(POPE, first, at(9), publisher="NBC4"),
                FeedItemSpec(POPE + " - NBC 6", copy, at(10), publisher="NBC 6"),
                FeedItemSpec("Harbour council approves new ferry terminal budget", other, at(11)),
            ]
        ),
    )
    server = site.start()
    out = tmp_path / "out"
    report = run(store, make_config([("org", "a", feed)], server), now=at(12), output_dir=str(out))
    assert report.delivered == 2
    document = json.loads((out / "a.json").read_text())
    assert document["version"] == "https://jsonfeed.org/version/1.1"
    assert [item["title"] for item in document["items"]] == [
        "Harbour council approves new ferry terminal budget",
        POPE,
    ]
    pope = document["items"][1]
    assert pope["url"] == first
    assert pope["authors"] == [{"name": "NBC4"}]
    assert story("vatican")[0][:60] in pope["content_text"]
    also = pope["_feedmd"]["also_published_by"]
    assert [(a["publisher"], a["url"], a["rule"]) for a in also] == [("NBC 6", copy, "jaccard")]
    assert len({item["id"] for item in document["items"]}) == 2

    parsed = feedparser.parse((out / "a.atom").read_bytes())
    assert not parsed.bozo, parsed.get("bozo_exception")
    assert parsed.version == "atom10"
    assert [entry.title for entry in parsed.entries] == [
        "Harbour council approves new ferry terminal budget",
        POPE,
    ]
    assert [entry.id for entry in parsed.entries] == [i["id"] for i in document["items"]]
    assert story("vatican")[0][:60] in parsed.entries[1].content[0].value

    again = run(store, make_config([("org", "a", feed)], server), now=at(13), output_dir=str(out))
    assert again.delivered == 0
