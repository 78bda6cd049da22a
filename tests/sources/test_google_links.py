"""New-format Google News links in a real run: resolved over HTTP against the loopback
Google double, cached in the store so each link is resolved once, and an unresolvable
link goes through unresolved, deduplicated by headline only and never scraped."""

from __future__ import annotations

from conftest import FeedItemSpec, Site, article_html, at, make_config, rss, story
from google_double import GoogleDouble

from feedmd.pipeline import run
from feedmd.store import Store

TITLE = "Harbour council approves new ferry terminal budget"


def test_links_resolve_once_and_unresolvable_ones_go_on(site: Site, store: Store) -> None:
    with GoogleDouble() as google:
        server = site.start()
        base = f"http://127.0.0.1:{server.port}"
        site.put("http://pub.example/ferry", article_html(TITLE, story("ferry")))
        publisher = f"{base}/pub.example/ferry"  # the fixture server, asked without a proxy
        link = google.add(publisher)
        article_id = link.rsplit("/", 1)[1].split("?")[0]
        unknown = "https://news.google.com/rss/articles/" + article_id[:-8] + "AAAAAAAA?oc=5"
        site.put(
            "http://feeds.example/a.xml",
            rss(
                [
                    FeedItemSpec(TITLE, link, at(8), guid="a-1"),
                    FeedItemSpec(
                        "Orchard growers warn of smallest apple harvest", unknown, at(9), guid="a-2"
                    ),
                ]
            ),
        )
        site.put(
            "http://feeds.example/b.xml",
            rss([FeedItemSpec(TITLE + " - Tribune", link, at(10), guid="b-1")]),
        )
        config = make_config(
            [("o", "a", f"{base}/feeds.example/a.xml"), ("o", "b", f"{base}/feeds.example/b.xml")],
            google_news_base_url=google.url,
        )
        report = run(store, config, now=at(12))
        assert google.count("page", article_id) == 1
        assert google.count("batchexecute", article_id) == 1
        rows = {row["entry_id"]: row for row in store._db.query("SELECT * FROM items")}
        assert rows["a-1"]["url_raw"] == publisher
        assert rows["a-1"]["link_resolution"] == "google-news-batchexecute"
        assert rows["b-1"]["url_raw"] == publisher
        assert rows["a-2"]["link_resolution"] == "unresolved"
        assert rows["a-2"]["url_hash"] is None
        assert rows["a-2"]["decision"] == "kept"
        body_ids = [rows[key]["body_id"] for key in ("a-1", "b-1")]
        assert body_ids[0] is not None and body_ids[0] == body_ids[1]
        assert rows["a-2"]["body_id"] is None
        assert report.scraped == 1 and report.kept == 3

        site.put("http://feeds.example/c.xml", rss([FeedItemSpec(TITLE, link, at(11), guid="c-1")]))
        config_c = make_config(
            [("o", "c", f"{base}/feeds.example/c.xml")], google_news_base_url=google.url
        )
        run(store, config_c, now=at(13))
        assert google.count("page", article_id) == 1
        assert google.count("batchexecute", article_id) == 1
        row = next(store._db.query("SELECT * FROM items WHERE entry_id = 'c-1'"))
        assert row["url_raw"] == publisher
