"""The SSRF guard: no connection to a non-public address unless allow_private_addresses,
checked on the resolved address at connect time, on the proxy, and after every redirect."""

from __future__ import annotations

import asyncio
import dataclasses
import re
import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler
from typing import Any

import pytest
from click.testing import CliRunner
from conftest import FeedItemSpec, Site, at, make_config, rss
from loopback import QuietServer

from feedmd.cli.main import main
from feedmd.errors import AddressRefused, FetchError
from feedmd.pipeline import run
from feedmd.settings import Settings
from feedmd.sources.http import Fetcher
from feedmd.sources.security import address_class, check_url, numeric_host
from feedmd.store import Store

REFUSED = {
    "127.0.0.1": "loopback address",
    "127.8.9.10": "loopback address",
    "::1": "loopback address",
    "0.0.0.0": "unspecified address",
    "::": "unspecified address",
    "10.1.2.3": "private address",
    "172.16.0.1": "private address",
    "192.168.1.1": "private address",
    "fc00::1": "private address",
    "169.254.169.254": "link-local address",
    "fe80::1": "link-local address",
    "224.0.0.1": "multicast address",
    "ff02::1": "multicast address",
    "240.0.0.1": "reserved address",
    "100.64.0.1": "shared address (carrier-grade NAT)",
    "fec0::1": "site-local address",
    "::ffff:127.0.0.1": "loopback address, IPv4-mapped 127.0.0.1",
    "::ffff:169.254.169.254": "link-local address, IPv4-mapped 169.254.169.254",
    "::127.0.0.1": "loopback address, IPv4-compatible 127.0.0.1",
    "2002:7f00:1::": "loopback address, 6to4 127.0.0.1",
    "2002:a00:1::": "private address, 6to4 10.0.0.1",
    "64:ff9b::7f00:1": "loopback address, NAT64 127.0.0.1",
    "64:ff9b:1::1": "private address, local-use NAT64",
}
PUBLIC = ["93.184.216.34", "8.8.8.8", "2606:4700::1111", "::ffff:8.8.8.8", "64:ff9b::808:808"]


@pytest.mark.parametrize(("address", "reason"), REFUSED.items())
def test_non_public_addresses_are_classified(address: str, reason: str) -> None:
    assert address_class(address) == reason


@pytest.mark.parametrize("address", PUBLIC)
def test_public_addresses_pass(address: str) -> None:
    assert address_class(address) is None


@pytest.mark.parametrize(
    "url",
    ["file:///etc/passwd", "ftp://example.org/x", "gopher://example.org/", "javascript:alert(1)"],
)
def test_only_http_and_https(url: str) -> None:
    with pytest.raises(FetchError, match="only http and https"):
        check_url(url, allow_private=True)


@pytest.mark.parametrize(
    "url", ["http://localhost/", "http://a.localhost:8080/", "http://[::1]/", "http://10.0.0.1/"]
)
def test_local_literals_are_refused_before_connecting(url: str) -> None:
    with pytest.raises(AddressRefused, match="refused to connect to"):
        check_url(url)
    check_url(url, allow_private=True)


def _get(url: str, settings: Settings) -> Any:
    async def go() -> Any:
        async with Fetcher(settings) as fetcher:
            return await fetcher.get(url)

    return asyncio.run(go())


class _Server:
    """A plain loopback HTTP server: ``/redirect?to=URL`` answers 302, anything else 200."""

    def __init__(self) -> None:
        class Handler(BaseHTTPRequestHandler):
            def log_message(self, format: str, *args: Any) -> None:
                return

            def do_GET(self) -> None:
                if self.path.startswith("/redirect?to="):
                    self.send_response(302)
                    self.send_header("Location", self.path.split("=", 1)[1])
                    self.send_header("Content-Length", "0")
                    self.end_headers()
                    return
                body = b"<html><body>inside</body></html>"
                self.send_response(200)
                self.send_header("Content-Type", "text/html")
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                self.wfile.write(body)

        self.httpd = QuietServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self.httpd.server_address[1]}"
        self.thread = threading.Thread(target=self.httpd.serve_forever, daemon=True)


@pytest.fixture
def inside() -> Iterator[_Server]:
    server = _Server()
    server.thread.start()
    yield server
    server.httpd.shutdown()
    server.httpd.server_close()


def test_loopback_is_refused_by_default_and_allowed_when_set(inside: _Server) -> None:
    assert Settings().allow_private_addresses is False
    with pytest.raises(AddressRefused, match=r"refused to connect to 127\.0\.0\.1 \(loopback"):
        _get(f"{inside.url}/x", Settings())
    allowed = Settings(allow_private_addresses=True)
    assert _get(f"{inside.url}/x", allowed).status == 200


def test_a_name_is_checked_after_resolution(inside: _Server) -> None:
    port = inside.url.rsplit(":", 1)[1]
    with pytest.raises(AddressRefused) as refused:
        _get(f"http://localhost.:{port}/x", Settings())
    assert "loopback address" in str(refused.value)


def test_connect_time_guard_catches_a_name_the_early_check_cannot(
    inside: _Server, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A public-looking name that resolves inward (DNS rebinding) is refused at connect
    time, on the address actually resolved."""
    import feedmd.sources.http as http

    async def rebinding(host: str, port: int, timeout: float | None) -> list[str]:
        return ["8.8.8.8", "127.0.0.1"] if host == "news.example.org" else [host]

    monkeypatch.setattr(http, "_resolve", rebinding)
    with pytest.raises(AddressRefused, match=r"127\.0\.0\.1 \(loopback address\) \(news"):
        _get("http://news.example.org/story", Settings())


@pytest.fixture
def names(monkeypatch: pytest.MonkeyPatch) -> dict[str, list[str]]:
    """A fake resolver (name -> addresses) and a guard that lets the test server's name
    (``publisher.test``, on 127.0.0.1) through, since a test cannot serve from a public
    address; every other name gets the real check on its resolved address."""
    import feedmd.sources.http as http

    table: dict[str, list[str]] = {"publisher.test": ["127.0.0.1"]}

    async def resolve(host: str, port: int, timeout: float | None) -> list[str]:
        return table.get(host, [host])

    real = http.check_address

    def check(address: str, host: str | None = None, role: str = "") -> None:
        if host != "publisher.test":
            real(address, host, role)

    monkeypatch.setattr(http, "_resolve", resolve)
    monkeypatch.setattr(http, "check_address", check)
    return table


def test_a_redirect_inward_is_refused_at_connect_time(
    inside: _Server, names: dict[str, list[str]]
) -> None:
    names["metadata.test"] = ["169.254.169.254"]
    port = inside.url.rsplit(":", 1)[1]
    start = f"http://publisher.test:{port}"
    assert _get(f"{start}/ok", Settings()).status == 200
    with pytest.raises(AddressRefused, match=r"169\.254\.169\.254 \(link-local address\)"):
        _get(f"{start}/redirect?to=http://metadata.test/latest/meta-data/", Settings())
    with pytest.raises(AddressRefused, match=r"to 10\.0\.0\.1 \(private address\)"):
        _get(f"{start}/redirect?to=http://10.0.0.1/admin", Settings())
    with pytest.raises(FetchError, match=r"UnsupportedProtocol|only http and https"):
        _get(f"{start}/redirect?to=file:///etc/passwd", Settings())


def test_a_loopback_proxy_is_refused_unless_allowed(site: Site) -> None:
    server = site.start()
    strict = Settings(proxy=server.proxy_url)
    with pytest.raises(AddressRefused, match=r"127\.0\.0\.1 \(loopback address\) for the proxy"):
        _get("http://www.capitaltribune.example/", strict)
    relaxed = dataclasses.replace(strict, allow_private_addresses=True)
    assert _get("http://www.capitaltribune.example/nothing", relaxed).status == 404
    with pytest.raises(AddressRefused, match=r"to 127\.0\.0\.1 \(loopback address\);"):
        _get("http://127.0.0.1/", dataclasses.replace(strict, proxy="http://93.184.216.34:3128"))


def test_refusals_are_recorded_on_the_feed_and_on_the_item(
    site: Site, store: Store, names: dict[str, list[str]]
) -> None:
    names["intranet.test"] = ["10.20.30.40"]
    server = site.start()
    base = f"http://publisher.test:{server.port}"  # the fixture server, asked without proxy
    feed = site.put(
        "http://feeds.example/a.xml",
        rss(
            [FeedItemSpec("Harbour council approves ferry budget", "http://intranet.test/x", at(8))]
        ),
    )
    good = f"{base}/feeds.example/a.xml"
    inward = f"http://127.0.0.1:{server.port}/feeds.example/a.xml"
    config = make_config(
        [("o", "good", good), ("o", "inward", inward)], allow_private_addresses=False
    )
    assert feed and config.settings.allow_private_addresses is False
    report = run(store, config, now=at(12))
    assert report.feed_errors == {
        "inward": "fetch failed: refused to connect to 127.0.0.1 (loopback address);"
        " set allow_private_addresses to allow it"
    }
    row = next(store._db.query("SELECT decision, error FROM items"))
    assert row["decision"] == "failed"
    assert row["error"] == (
        "scrape failed: refused to connect to 10.20.30.40 (private address) (intranet.test);"
        " set allow_private_addresses to allow it"
    )


def test_fingerprint_of_a_loopback_url_fails_with_the_reason(inside: _Server) -> None:
    result = CliRunner().invoke(main, ["fingerprint", f"{inside.url}/page"])
    assert result.exit_code == 1
    assert "refused to connect to 127.0.0.1 (loopback address)" in result.output
    assert "Traceback" not in result.output
    allowed = CliRunner().invoke(
        main, ["fingerprint", f"{inside.url}/page", "--allow-private-addresses"]
    )
    assert allowed.exit_code == 0, allowed.output


# ---- secrets never printed ------------------------------------------------------------------

SENTINEL = "sentinel-s3cr3t-value"
SECRET_WORDS = ("secret", "token", "password", "passwd", "credential", "api_key", "private_key")


def test_no_secret_is_printed_by_feedmd_settings_or_stored_with_a_run() -> None:
    """Settings named like a secret, and the password of a proxy URL, are never shown by
    `feedmd settings` (text, JSON or the reference table) nor kept in the settings a run
    stores (``Settings.describe``)."""
    from feedmd.settings import SETTING_FIELDS
    from feedmd.settings.config import load_config

    secret_like = [n for n in SETTING_FIELDS if any(word in n for word in SECRET_WORDS)]
    env = {
        f"FEEDMD_{name.upper()}": SENTINEL
        for name in secret_like
        if isinstance(SETTING_FIELDS[name].default, str)
    }
    env["FEEDMD_PROXY"] = f"http://user:{SENTINEL}@proxy.example:3128"
    env["FEEDMD_WEBHOOK_SECRET"] = SENTINEL  # a secret's variable, not a setting
    for args in (["settings"], ["settings", "--json"], ["settings", "--markdown"]):
        result = CliRunner(env=env).invoke(main, args)
        assert result.exit_code == 0, result.output
        assert SENTINEL not in result.output, args
    described = str(load_config(None, environ=env).settings.describe())
    assert SENTINEL not in described


# Host forms ipaddress does not parse but getaddrinfo / inet_aton (and so a proxy) and
# browsers read as addresses (issue 14, item 7), with the address each stands for.
NUMERIC_HOSTS = {
    "2130706433": "127.0.0.1 (loopback address)",
    "0x7f000001": "127.0.0.1 (loopback address)",
    "0X7F000001": "127.0.0.1 (loopback address)",
    "0xa9fea9fe": "169.254.169.254 (link-local address)",
    "127.1": "127.0.0.1 (loopback address)",
    "0": "0.0.0.0 (unspecified address)",
    "0177.0.0.1": "127.0.0.1 (loopback address)",
    "0x7f.1": "127.0.0.1 (loopback address)",
    "127.0.0.1.": "127.0.0.1 (loopback address)",
    "169.254.43518": "169.254.169.254 (link-local address)",
    "10.1": "10.0.0.1 (private address)",
    "%31%32%37.0.0.%31": "127.0.0.1 (loopback address)",
    "[::ffff:7f00:1]": "::ffff:7f00:1 (loopback address, IPv4-mapped 127.0.0.1)",
    "[::ffff:169.254.169.254]": "::ffff:a9fe:a9fe (link-local address, IPv4-mapped",
    "[0:0:0:0:0:0:0:1]": "::1 (loopback address)",
}


@pytest.mark.parametrize(("host", "reason"), NUMERIC_HOSTS.items())
def test_numeric_host_forms_are_read_as_the_address_they_stand_for(host: str, reason: str) -> None:
    with pytest.raises(AddressRefused, match=re.escape(f"refused to connect to {reason}")):
        check_url(f"http://{host}/latest/meta-data/")


@pytest.mark.parametrize(
    ("host", "address"),
    [("134744072", "8.8.8.8"), ("0x08080808", "8.8.8.8"), ("8.8.2056", "8.8.8.8")],
)
def test_numeric_forms_of_public_addresses_pass(host: str, address: str) -> None:
    assert str(numeric_host(host)) == address
    check_url(f"http://{host}/")


@pytest.mark.parametrize(
    "host", ["1.2.3.4.5", "256.0.0.1", "1.2.3.0x100", "0x1g.0.0.1", "a.09", "news.24"]
)
def test_a_host_ending_in_a_number_that_is_no_address_is_refused(host: str) -> None:
    with pytest.raises(FetchError, match=r"refused host .*: (not a valid IPv4|IPv4 address out)"):
        check_url(f"http://{host}/")


@pytest.mark.parametrize("host", ["example.org", "1e1", "v4.example", "x.0y", "0x.example"])
def test_names_are_still_names(host: str) -> None:
    assert numeric_host(host) is None
    check_url(f"http://{host}/")


@pytest.fixture
def proxied(site: Site, monkeypatch: pytest.MonkeyPatch) -> Iterator[tuple[Settings, Any]]:
    """Settings with ``proxy`` pointing at the real loopback fixture server (a forward
    proxy that records every request). A test cannot run a proxy on a public address, so
    the proxy's own address is let through; every target is checked as in production."""
    import feedmd.sources.http as http

    server = site.start()
    real = http.check_address

    def check(address: str, host: str | None = None, role: str = "") -> None:
        if role != "proxy":
            real(address, host, role)

    monkeypatch.setattr(http, "check_address", check)
    yield Settings(proxy=server.proxy_url), server


def test_the_proxy_is_reached_for_a_public_name(proxied: tuple[Settings, Any]) -> None:
    settings, server = proxied
    assert _get("http://www.capitaltribune.example/nothing", settings).status == 404
    assert server.count("capitaltribune") == 1


@pytest.mark.parametrize(("host", "reason"), NUMERIC_HOSTS.items())
def test_numeric_hosts_never_reach_the_proxy(
    proxied: tuple[Settings, Any], host: str, reason: str
) -> None:
    """Before the fix, these were sent to the proxy, which resolved them inward (httpx
    itself refuses a dotted quad with an octal part as an invalid URL)."""
    settings, server = proxied
    with pytest.raises(FetchError) as refused:
        _get(f"http://{host}/latest/meta-data/", settings)
    message = str(refused.value)
    assert f"refused to connect to {reason}" in message or "invalid URL" in message
    assert server.requests == []
