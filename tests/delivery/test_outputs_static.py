"""The output folder is servable as it is by any static host: a real static HTTP server on
127.0.0.1 serves the folder a run (the demo, `feedmd export -o`) wrote, and every link a
document gives for itself answers 200. Files are world-readable (0666 less the umask), the
home page is a human page, and summaries are plain text."""

from __future__ import annotations

import dataclasses
import functools
import json
import os
import stat
import threading
import xml.etree.ElementTree as ET
from collections.abc import Iterator
from contextlib import contextmanager
from email.utils import format_datetime
from http.server import SimpleHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from urllib.parse import urlsplit

import httpx
import pytest
from click.testing import CliRunner
from conftest import Site, article_html, at, make_config, story

from feedmd.cli.delivery import export_command
from feedmd.delivery import render
from feedmd.pipeline import run
from feedmd.settings.config import OutputConfig
from feedmd.store import Store
from feedmd.tools.demo import run_demo

pytestmark = pytest.mark.both_backends

ATOM = "{http://www.w3.org/2005/Atom}"
POPE = "Pope Leo to undergo surgery for small growth on his lung"


class _Quiet(SimpleHTTPRequestHandler):
    def log_message(self, format: str, *args: object) -> None:
        pass


class _QuietServer(ThreadingHTTPServer):
    def handle_error(self, request: object, client_address: object) -> None:
        pass  # a client closing its keep-alive connection is not a test failure


@contextmanager
def static_server(folder: Path) -> Iterator[str]:
    """Serve ``folder`` as it is (Python's static file server) on a free loopback port."""
    handler = functools.partial(_Quiet, directory=str(folder))
    server = _QuietServer(("127.0.0.1", 0), handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}"
    finally:
        server.shutdown()
        server.server_close()
        thread.join(timeout=5)


@contextmanager
def umask(mask: int) -> Iterator[None]:
    old = os.umask(mask)
    try:
        yield
    finally:
        os.umask(old)


def feed_with_html_summary(link: str) -> str:
    summary = (
        "&lt;p&gt;The pontiff &lt;b&gt;will undergo&lt;/b&gt; surgery &amp;amp; rest"
        "&lt;script&gt;alert(1)&lt;/script&gt;&lt;/p&gt;"
    )
    return (
        '<?xml version="1.0" encoding="UTF-8"?>\n<rss version="2.0"><channel>'
        "<title>Vatican news</title><link>http://feeds.example/</link>"
        "<description>test</description>"
        f"<item><title>{POPE}</title><link>{link}</link><guid>{link}</guid>"
        f"<pubDate>{format_datetime(at(9), usegmt=True)}</pubDate>"
        f"<description>{summary}</description></item>"
        "</channel></rss>\n"
    )


def run_into(site: Site, store: Store, out: Path, base_url: str) -> None:
    page = site.put("http://four.example/pope", article_html(POPE, story("vatican")))
    feed = site.put("http://feeds.example/vatican.xml", feed_with_html_summary(page))
    config = make_config([("org", "vatican", feed)], site.start())
    config = dataclasses.replace(config, output=OutputConfig(str(out), base_url))
    run(store, config, now=at(12))


def test_feed_files_are_readable_by_other_users_and_self_links_answer(
    site: Site, store: Store, tmp_path: Path
) -> None:
    out = tmp_path / "out"
    out.mkdir()
    with static_server(out) as base:
        with umask(0o022):
            run_into(site, store, out, base)
        for name in ("vatican.json", "vatican.atom"):
            mode = stat.S_IMODE((out / name).stat().st_mode)
            assert mode == 0o644, oct(mode)
        assert not [p.name for p in out.iterdir() if p.name.startswith(".")]

        response = httpx.get(f"{base}/vatican.json")
        assert response.status_code == 200
        document = response.json()
        assert document["feed_url"] == f"{base}/vatican.json"
        followed = httpx.get(document["feed_url"])
        assert followed.status_code == 200 and followed.json() == document
        # a human page (the upstream site), never the upstream feed's XML
        assert document["home_page_url"] == "http://feeds.example/"
        assert "next_url" not in document  # a static file has no ?before= page

        atom = httpx.get(f"{base}/vatican.atom")
        assert atom.status_code == 200
        links = {
            link.get("rel"): link.get("href")
            for link in ET.fromstring(atom.content).findall(f"{ATOM}link")
        }
        assert links["self"] == f"{base}/vatican.atom"
        assert httpx.get(links["self"]).status_code == 200
        assert links["alternate"] == "http://feeds.example/"


def test_the_umask_is_respected(site: Site, store: Store, tmp_path: Path) -> None:
    out = tmp_path / "out"
    with umask(0o027):
        run_into(site, store, out, "http://h.example")
    assert stat.S_IMODE((out / "vatican.json").stat().st_mode) == 0o640


def test_summary_is_plain_text(site: Site, store: Store, tmp_path: Path) -> None:
    out = tmp_path / "out"
    run_into(site, store, out, "http://h.example")
    item = json.loads((out / "vatican.json").read_text())["items"][0]
    assert item["summary"] == "The pontiff will undergo surgery & rest"
    assert "<" not in item["summary"]
    entry = ET.fromstring((out / "vatican.atom").read_bytes()).find(f"{ATOM}entry")
    assert entry is not None
    summary = entry.find(f"{ATOM}summary")
    assert summary is not None and summary.text == item["summary"]
    assert summary.get("type") in (None, "text")


def test_plain_text_of_markdown_and_html() -> None:
    assert render.plain_text("<p>One<br>two</p><style>p{}</style>") == "One two"
    assert render.plain_text("A &lt;b&gt; tag, a &amp;") == "A <b> tag, a &"
    assert render.plain_text(render.render_html("A [link](http://x.example) and **bold**")) == (
        "A link and bold"
    )


def test_the_demo_folder_served_as_it_is(tmp_path: Path) -> None:
    out = tmp_path / "demo"
    with umask(0o022):
        result = run_demo(out, echo=lambda _line: None)
    with static_server(out) as base:
        for path in result.outputs:
            assert stat.S_IMODE(path.stat().st_mode) == 0o644
            response = httpx.get(f"{base}/{path.name}")
            assert response.status_code == 200
            if path.suffix == ".json":
                self_url = response.json()["feed_url"]
            else:
                root = ET.fromstring(response.content)
                self_url = next(
                    link.get("href")
                    for link in root.findall(f"{ATOM}link")
                    if link.get("rel") == "self"
                )
            # the demo's base_url is another port: the path must be the file's own
            path_part = urlsplit(self_url).path
            assert path_part == f"/{path.name}"
            assert httpx.get(base + path_part).status_code == 200


def test_export_to_a_file_links_to_that_file(site: Site, store: Store, tmp_path: Path) -> None:
    out = tmp_path / "public"
    out.mkdir()
    run_into(site, store, tmp_path / "runs", "http://h.example")
    db = store.path
    with static_server(out) as base:
        runner = CliRunner()
        for fmt, name in (("json", "all.json"), ("atom", "all.atom")):
            result = runner.invoke(
                export_command,
                [
                    "--org",
                    "org",
                    "--format",
                    fmt,
                    "-o",
                    str(out / name),
                    "--db",
                    db,
                    "--base-url",
                    base,
                ],
            )
            assert result.exit_code == 0, result.output
            assert stat.S_IMODE((out / name).stat().st_mode) & 0o044 == 0o044
        document = httpx.get(f"{base}/all.json").json()
        assert document["feed_url"] == f"{base}/all.json"
        assert httpx.get(document["feed_url"]).status_code == 200
        root = ET.fromstring(httpx.get(f"{base}/all.atom").content)
        self_link = next(
            x.get("href") for x in root.findall(f"{ATOM}link") if x.get("rel") == "self"
        )
        assert self_link == f"{base}/all.atom"
        assert httpx.get(self_link).status_code == 200
