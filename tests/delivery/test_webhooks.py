"""Signed webhooks, at least once: a real receiver on 127.0.0.1 verifies every signature
with the standard library, fails on purpose (500, a closed connection, a hang, a redirect)
and sees the retries carry the same webhook-id and body. The schedule is driven by moving
``now`` forward, so nothing here waits for a backoff."""

from __future__ import annotations

import contextlib
import dataclasses
import json
import logging
import random
import socket
import threading
import time
from collections.abc import Iterator
from dataclasses import dataclass
from datetime import timedelta
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner
from conftest import FeedItemSpec, Site, article_html, at, make_config, rss, store_dump, story
from loopback import FAST, SECRET_ENV, Receiver
from standardwebhooks.webhooks import Webhook

from feedmd.cli.delivery import deliveries_group, export_command
from feedmd.delivery import deliver, render, webhooks
from feedmd.errors import ConfigError
from feedmd.models import WebhookCounts
from feedmd.pipeline import run
from feedmd.settings.config import SETTING_FIELDS, Config, WebhookConfig
from feedmd.store import Store, connect_store
from feedmd.store.queue import EndpointSpec
from feedmd.timeutil import utcnow

pytestmark = pytest.mark.both_backends


@dataclass(frozen=True)
class Hook:
    """A configured endpoint as config.py will parse [[orgs.webhooks]]."""

    url: str
    org: str
    feed: str = ""
    secret_env: str = SECRET_ENV


@dataclass(frozen=True)
class HookedConfig(Config):
    """A Config with the proposed ``webhooks`` field."""

    webhooks: tuple[Hook, ...] = ()


@pytest.fixture
def secret(monkeypatch: pytest.MonkeyPatch) -> str:
    value = webhooks.new_secret()
    monkeypatch.setenv(SECRET_ENV, value)
    return value


@pytest.fixture
def receiver(secret: str) -> Iterator[Receiver]:
    built = Receiver(secret)
    yield built
    built.stop()


def stored_day(
    site: Site, store: Store, hooks: tuple[WebhookConfig, ...] = (), deliver_outputs: bool = True
) -> tuple[Config, int]:
    """A real run that keeps two items in feed 'a' of org 'org' (delivering them to
    ``hooks`` in its step 6 unless ``deliver_outputs`` is off); returns its config, run."""
    first = site.put("http://four.example/pope", article_html("Pope", story("vatican")))
    other = site.put("http://other.example/ferry", article_html("Ferry", story("ferry")))
    feed = site.put(
        "http://feeds.example/a.xml",
        rss(
            [
                FeedItemSpec("Pope Leo to undergo surgery for small growth", first, at(9)),
                FeedItemSpec("Harbour council approves new ferry terminal budget", other, at(11)),
            ]
        ),
    )
    config = dataclasses.replace(make_config([("org", "a", feed)], site.start()), webhooks=hooks)
    report = run(store, config, now=at(12), deliver_outputs=deliver_outputs)
    return config, report.run_id


def deliver_with_hooks(store: Store, config: Config, run_id: int, *hooks: Hook) -> list[int]:
    """Step 6 with webhooks configured; returns the kept item ids, oldest first."""
    hooked = HookedConfig(
        settings=config.settings, feeds=config.feeds, output=config.output, webhooks=hooks
    )
    kept = sorted(item.item_id for item in store.kept_items(feed="a"))
    deliver.deliver(store, hooked, run_id, kept, at(12))
    return kept


def test_signed_messages_are_retried_with_stable_ids_until_delivered(
    site: Site, store: Store, receiver: Receiver, secret: str, tmp_path: Path
) -> None:
    config, run_id = stored_day(site, store)
    receiver.plan = [500, "close"]
    kept = deliver_with_hooks(
        store, config, run_id, Hook(receiver.url, "org"), Hook(receiver.url, "org", feed="b")
    )
    assert len(receiver.seen) == 1  # 500: the endpoint is paused for the rest of the pass
    first = store.list_deliveries()
    assert {(r.item_id, r.status, r.attempts) for r in first} == {
        (kept[0], "pending", 1),
        (kept[1], "pending", 0),
    }
    assert next(r for r in first if r.attempts).last_http_status == 500

    path = store.path
    store.close()  # a restart: everything needed is in the store
    db = connect_store(path)
    later = utcnow() + timedelta(hours=1)
    result = webhooks.deliver_due(db, FAST, now=later)
    assert (result.delivered, result.failed_attempts) == (0, 1)  # the closed connection
    assert "RemoteProtocolError" in (db.list_deliveries()[0].last_error or "")
    result = webhooks.deliver_due(db, FAST, now=later + timedelta(hours=1))
    assert (result.delivered, result.failed_attempts) == (2, 0)

    assert [seen["valid"] for seen in receiver.seen] == [True] * 4
    by_id: dict[str, list[bytes]] = {}
    for seen in receiver.seen:
        by_id.setdefault(seen["id"], []).append(seen["body"])
        Webhook(secret).verify(seen["body"], seen["headers"])  # the reference library agrees
    assert len(by_id) == 2 and all(len(set(bodies)) == 1 for bodies in by_id.values())
    assert all(seen["path"] == "/hook?token=abc" for seen in receiver.seen)

    rows = db.list_deliveries()
    assert {(r.status, r.attempts, r.last_error) for r in rows} == {("delivered", 2, None)}
    assert db.list_endpoints()[0].consecutive_failures == 0
    message = json.loads(receiver.seen[-1]["body"])
    assert message["type"] == "item.kept"
    item = db.items_by_id([message["data"]["_feedmd"]["canonical_item_id"]])[0]
    assert message["data"] == render.json_item(item)  # the JSON Feed's item object
    assert db.pending_count() == 0
    deliver_with_hooks(db, config, run_id, Hook(receiver.url, "org"))
    assert len(db.list_deliveries()) == 2  # queued once per item and endpoint
    db.close()


def test_a_hanging_endpoint_costs_one_timeout_per_pass(
    site: Site, store: Store, receiver: Receiver
) -> None:
    stored_day(site, store)
    receiver.default = "hang"
    now = utcnow()
    store.add_endpoint(EndpointSpec(receiver.url, "org", "org", SECRET_ENV), now)
    kept = [item.item_id for item in store.kept_items(feed="a")]
    assert webhooks.enqueue_items(store, kept, FAST, now) == 2
    started = time.monotonic()
    policy = webhooks.WebhookPolicy(timeout_seconds=0.3)
    result = webhooks.deliver_due(store, policy, now=now)
    assert result.failed_attempts == 1 and len(receiver.seen) == 1
    assert time.monotonic() - started < 2  # one timeout, not one per message
    errors = {r.last_error for r in store.list_deliveries() if r.attempts}
    assert any(error and "timed out" in error for error in errors)
    assert {r.status for r in store.list_deliveries()} == {"pending"}


def test_a_redirect_is_not_followed(site: Site, store: Store, receiver: Receiver) -> None:
    config, run_id = stored_day(site, store)
    receiver.plan = ["redirect"]
    deliver_with_hooks(store, config, run_id, Hook(receiver.url, "org"))
    assert [seen["path"] for seen in receiver.seen] == ["/hook?token=abc"]
    row = next(r for r in store.list_deliveries() if r.attempts)
    assert row.last_http_status == 307
    where = receiver.url.split("/hook")[0] + "/elsewhere"
    assert row.last_error == f"HTTP 307 redirect to {where} not followed"


def test_a_message_is_given_up_after_the_retry_window(
    site: Site, store: Store, receiver: Receiver
) -> None:
    config, run_id = stored_day(site, store)
    receiver.default = 500
    deliver_with_hooks(store, config, run_id, Hook(receiver.url, "org"))
    result = webhooks.deliver_due(store, FAST, now=utcnow() + timedelta(hours=25))
    assert result.gave_up == 1
    statuses = sorted(r.status for r in store.list_deliveries())
    assert statuses == ["failed", "pending"]


def test_an_endpoint_is_disabled_after_a_run_of_failures_and_enabled_again(
    site: Site, store: Store, receiver: Receiver, tmp_path: Path
) -> None:
    config, run_id = stored_day(site, store)
    receiver.default = 503
    deliver_with_hooks(store, config, run_id, Hook(receiver.url, "org"))
    policy = webhooks.WebhookPolicy(timeout_seconds=0.5, disable_after_failures=3)
    now = utcnow()
    disabled = 0
    for hour in (1, 2, 3):
        disabled += webhooks.deliver_due(store, policy, now=now + timedelta(hours=hour)).disabled
    assert disabled == 1 and len(receiver.seen) == 3  # step 6's attempt and two retries
    webhooks.deliver_due(store, policy, now=now + timedelta(hours=4))
    assert len(receiver.seen) == 3  # disabled: nothing sent, nothing lost

    db_args = ["--db", store.path]
    listing = CliRunner().invoke(deliveries_group, db_args)
    assert listing.exit_code == 0, listing.output
    assert "disabled (3 consecutive failed attempts)" in listing.output
    assert "token=abc" not in listing.output  # URLs are shown without their query
    enabled = CliRunner().invoke(deliveries_group, [*db_args, "enable", "1"])
    assert enabled.exit_code == 0, enabled.output
    assert "2 messages due now" in enabled.output
    receiver.default = 200
    assert webhooks.deliver_due(store, policy).delivered == 2
    as_json = json.loads(CliRunner().invoke(deliveries_group, [*db_args, "--json"]).stdout)
    assert {d["status"] for d in as_json["deliveries"]} == {"delivered"}


def test_the_secret_is_never_logged_stored_or_exported(
    site: Site,
    store: Store,
    receiver: Receiver,
    secret: str,
    tmp_path: Path,
    caplog: pytest.LogCaptureFixture,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    caplog.set_level(logging.DEBUG)
    config, run_id = stored_day(site, store)
    receiver.plan, receiver.default = [200, "close", "redirect"], 500
    deliver_with_hooks(store, config, run_id, Hook(receiver.url, "org"))
    for hours in (1, 2, 3, 4):
        webhooks.deliver_due(store, FAST, now=utcnow() + timedelta(hours=hours))
    monkeypatch.setenv(SECRET_ENV, secret.removeprefix("whsec_"))  # malformed: named only
    webhooks.deliver_due(store, FAST, now=utcnow() + timedelta(hours=5))
    assert f"webhook secret in {SECRET_ENV} must look like whsec_<base64>" in caplog.text
    db_args = ["--db", store.path]
    exported = CliRunner().invoke(export_command, [*db_args, "--feed", "a"]).output
    listed = CliRunner().invoke(deliveries_group, [*db_args, "--json"]).output
    dump = store_dump(store)
    key = secret.removeprefix("whsec_")
    for text in (caplog.text, exported, listed, dump):
        assert key not in text and key[:12] not in text
    assert "failed (attempt 3): HTTP 500: receiver says no" in caplog.text


def test_a_missing_or_malformed_secret_is_named_never_shown() -> None:
    with pytest.raises(ConfigError, match="FEEDMD_NOPE is not set"):
        webhooks.load_secret("FEEDMD_NOPE", environ={})
    for bad in ("plain-text-secret", "whsec_***not-base64***", "whsec_"):
        with pytest.raises(ConfigError) as caught:
            webhooks.load_secret("FEEDMD_X", environ={"FEEDMD_X": bad})
        assert str(caught.value) == "webhook secret in FEEDMD_X must look like whsec_<base64>"


def test_the_retry_schedule_backs_off_with_jitter_and_disables_after_about_a_day() -> None:
    policy = webhooks.WebhookPolicy()
    rng = random.Random(7)
    for attempt in range(1, 20):
        raw = min(policy.retry_max_seconds, policy.retry_base_seconds * 2 ** (attempt - 1))
        delay = webhooks.retry_delay(attempt, policy, rng).total_seconds()
        assert raw / 2 <= delay <= raw
    # The endpoint pauses after each failure with the same schedule, so the default
    # disable_after_failures is reached only after a long outage, never after a blip.
    pauses = [
        min(policy.retry_max_seconds, policy.retry_base_seconds * 2 ** (n - 1))
        for n in range(1, policy.disable_after_failures)
    ]
    assert sum(pauses) / 2 >= 12 * 3600 and sum(pauses) <= 30 * 3600


def test_the_demo_helper_delivers_every_kept_item(
    site: Site, store: Store, receiver: Receiver
) -> None:
    stored_day(site, store)
    receiver.plan = [500]
    result = webhooks.send_all_kept(store, receiver.url, secret_env=SECRET_ENV, wait_seconds=5)
    assert (result.delivered, result.failed_attempts) == (2, 1)
    assert all(seen["valid"] for seen in receiver.seen)
    with pytest.raises(ConfigError, match="FEEDMD_UNSET_SECRET is not set"):
        webhooks.send_all_kept(store, receiver.url, secret_env="FEEDMD_UNSET_SECRET")


# ---- batch endpoints -----------------------------------------------------------------------


def batch_hook(receiver: Receiver) -> WebhookConfig:
    """An org endpoint configured with ``batch = true``."""
    return WebhookConfig(url=receiver.url, org="org", secret_env=SECRET_ENV, batch=True)


def batches(receiver: Receiver) -> list[dict[str, Any]]:
    """The batch messages the receiver saw, in order."""
    return [seen for seen in receiver.seen if json.loads(seen["body"])["type"] == "items.kept"]


def test_a_batch_endpoint_gets_one_signed_message_with_all_the_runs_items(
    site: Site, store: Store, receiver: Receiver, secret: str
) -> None:
    per_item = WebhookConfig(url=receiver.url, org="org", feed="a", secret_env=SECRET_ENV)
    config, run_id = stored_day(site, store, hooks=(batch_hook(receiver), per_item))

    assert len(receiver.seen) == 3  # the per-item endpoint's two, the batch endpoint's one
    assert all(seen["valid"] for seen in receiver.seen)  # the standard library's HMAC
    (seen,) = batches(receiver)
    Webhook(secret).verify(seen["body"], seen["headers"])  # and the reference library's
    message = json.loads(seen["body"])
    assert set(message) == {"type", "timestamp", "data"}
    kept = store.kept_items(org="org")  # JSON Feed order: newest first
    assert message["data"] == {"run_id": run_id, "items": [render.json_item(i) for i in kept]}

    rows = store.list_deliveries()
    (row,) = [r for r in rows if r.batch_items]
    assert (row.status, row.attempts, row.message_id) == ("delivered", 1, seen["id"])
    assert row.title == f"batch of 2 items of run {run_id}"
    assert store.batch_items(row.id) == sorted(i.item_id for i in kept)

    again = deliver.deliver(store, config, run_id, [i.item_id for i in kept], at(12))
    assert (int(again), again.webhooks) == (0, WebhookCounts(0, 0, 0))
    assert len(receiver.seen) == 3  # queued once per run and endpoint, ever


def test_a_batch_is_retried_with_the_same_id_and_body_and_counts_as_endpoint_failures(
    site: Site, store: Store, receiver: Receiver
) -> None:
    config, run_id = stored_day(site, store)  # stored, no endpoint yet
    receiver.plan = [500, "close"]
    hooked = dataclasses.replace(config, webhooks=(batch_hook(receiver),))
    kept = sorted(item.item_id for item in store.kept_items(feed="a"))
    result = deliver.deliver(store, hooked, run_id, kept, at(12))
    assert result.webhooks == WebhookCounts(queued=1, delivered=0, failed_attempts=1)
    assert result == 0 and result.files == 0  # no output folder: still the int it was
    (endpoint,) = store.list_endpoints()
    assert endpoint.batch and endpoint.consecutive_failures == 1 and endpoint.paused_until
    (row,) = store.list_deliveries()
    assert (row.status, row.last_http_status) == ("pending", 500)
    assert row.next_attempt_at and row.next_attempt_at > row.created_at  # backed off

    later = utcnow() + timedelta(hours=1)
    assert webhooks.deliver_due(store, FAST, now=later).failed_attempts == 1
    assert store.list_endpoints()[0].consecutive_failures == 2
    assert webhooks.deliver_due(store, FAST, now=later + timedelta(hours=1)).delivered == 1

    assert len(receiver.seen) == 3 and all(seen["valid"] for seen in receiver.seen)
    assert {seen["id"] for seen in receiver.seen} == {row.message_id}
    assert len({seen["body"] for seen in receiver.seen}) == 1  # frozen at queuing
    (row,) = store.list_deliveries()
    assert (row.status, row.attempts, row.batch_items) == ("delivered", 3, 2)
    assert store.list_endpoints()[0].consecutive_failures == 0


def test_a_run_without_new_items_sends_no_batch_and_the_next_new_item_its_own(
    site: Site, store: Store, receiver: Receiver
) -> None:
    config, first_run = stored_day(site, store, hooks=(batch_hook(receiver),))
    assert len(receiver.seen) == 1

    quiet = run(store, config, now=at(13), force=True)
    assert quiet.kept == 0
    assert len(receiver.seen) == 1 and len(store.list_deliveries()) == 1

    extra = site.put("http://three.example/bridge", article_html("Bridge", story("bridge")))
    site.put(
        "http://feeds.example/a.xml",
        rss([FeedItemSpec("Old river bridge closes for a year of repairs", extra, at(13))]),
    )
    busy = run(store, config, now=at(14), force=True)
    assert busy.kept == 1
    first, second = (json.loads(seen["body"]) for seen in batches(receiver))
    assert first["data"]["run_id"] == first_run and len(first["data"]["items"]) == 2
    assert second["data"]["run_id"] == busy.run_id
    assert [item["title"] for item in second["data"]["items"]] == [
        "Old river bridge closes for a year of repairs"
    ]
    assert len({seen["id"] for seen in receiver.seen}) == 2


def _kill(store: Store, run_id: int, recovered: int | None = None) -> None:
    """Make ``run_id`` look killed mid-run (status 'running', no live lease), as SIGKILL
    leaves it, and forget that it recovered run ``recovered``; the next run abandons it
    and delivers again every kept item of an unrecovered dead run."""
    store._conn.execute("UPDATE runs SET status = 'running' WHERE id = ?", (run_id,))
    if recovered is not None:
        store._conn.execute("UPDATE runs SET recovered_by = NULL WHERE id = ?", (recovered,))


def test_a_recovered_run_gets_its_own_batch_once_with_one_id(
    site: Site, store: Store, receiver: Receiver
) -> None:
    hooks = (batch_hook(receiver),)
    # run 1 is killed after storing its items, before step 6 queued anything
    config, dead = stored_day(site, store, hooks=hooks, deliver_outputs=False)
    _kill(store, dead)
    receiver.plan = [500]
    recovering = run(store, config, now=at(13), force=True)  # no new items of its own
    assert recovering.kept == 0
    (row,) = store.list_deliveries()
    assert (row.status, row.attempts, row.batch_items) == ("pending", 1, 2)
    assert json.loads(receiver.seen[0]["body"])["data"]["run_id"] == dead  # the storing run

    # the recovering run is killed too, after its step 6 queued the batch: run 3 recovers
    # run 1's items again and must find that batch, not queue one with a new id
    _kill(store, recovering.run_id, recovered=dead)
    third = run(store, config, now=at(14), force=True)
    assert third.kept == 0
    recovered_by = store._conn.execute("SELECT recovered_by FROM runs WHERE id = ?", (dead,))
    assert recovered_by.fetchone()[0] == third.run_id
    assert [r.message_id for r in store.list_deliveries()] == [row.message_id]

    webhooks.deliver_due(store, FAST, now=utcnow() + timedelta(hours=1))
    assert len(receiver.seen) == 2 and all(seen["valid"] for seen in receiver.seen)
    assert {seen["id"] for seen in receiver.seen} == {row.message_id}
    assert store.list_deliveries()[0].status == "delivered"
    run(store, config, now=at(15), force=True)
    assert len(receiver.seen) == 2 and len(store.list_deliveries()) == 1


class Trickler:
    """A receiver that reads the request, then sends its answer one byte every
    ``interval`` seconds, never finishing: each read gets a byte well inside any per-read
    timeout, so only a deadline on the whole POST ends the attempt."""

    def __init__(self, interval: float = 0.1) -> None:
        self.interval = interval
        self.stop = threading.Event()
        self.accepted = 0
        self._sock = socket.create_server(("127.0.0.1", 0))
        self._sock.settimeout(0.1)
        self.url = f"http://127.0.0.1:{self._sock.getsockname()[1]}/hook"
        threading.Thread(target=self._serve, daemon=True).start()

    def _serve(self) -> None:
        while not self.stop.is_set():
            try:
                conn, _ = self._sock.accept()
            except TimeoutError:
                continue
            except OSError:  # closed by close()
                return
            self.accepted += 1
            threading.Thread(target=self._trickle, args=(conn,), daemon=True).start()

    def _trickle(self, conn: socket.socket) -> None:
        with conn:
            conn.settimeout(5)
            with contextlib.suppress(OSError):
                conn.recv(65536)  # the request (small enough for one read)
                answer = b"HTTP/1.1 200 OK\r\nX-Slow: " + b"a" * 10_000
                deadline = time.monotonic() + 30  # bounded even if the client never gives up
                for byte in answer:
                    if self.stop.is_set() or time.monotonic() > deadline:
                        return
                    conn.sendall(bytes([byte]))
                    time.sleep(self.interval)

    def close(self) -> None:
        self.stop.set()
        self._sock.close()


def test_the_webhook_timeout_bounds_the_whole_post_not_each_read(
    site: Site, store: Store, secret: str
) -> None:
    """Issue 14: a 2 s setting let a trickling receiver hold a POST for 50 s, longer than
    the message's claim. The receiver here sends a byte every 0.1 s; the attempt must end
    at about the 1 s setting, well inside the claim."""
    stored_day(site, store)
    trickler = Trickler(interval=0.1)
    try:
        now = utcnow()
        store.add_endpoint(EndpointSpec(trickler.url, "org", "org", SECRET_ENV), now)
        kept = [item.item_id for item in store.kept_items(feed="a")]
        webhooks.enqueue_items(store, kept, FAST, now)
        policy = webhooks.WebhookPolicy(timeout_seconds=1.0)
        started = time.monotonic()
        result = webhooks.deliver_due(store, policy, now=now)
        elapsed = time.monotonic() - started
    finally:
        trickler.close()
    assert trickler.accepted == 1 and result.failed_attempts == 1
    assert 0.9 <= elapsed < 5, elapsed  # a per-read timeout would take the full 30 s
    assert elapsed < webhooks.claim_seconds(policy)
    errors = [r.last_error for r in store.list_deliveries() if r.attempts]
    assert errors == ["timed out after 1s (whole request)"]


def test_the_claim_outlasts_the_longest_allowed_webhook_timeout() -> None:
    spec = SETTING_FIELDS["webhook_timeout_seconds"]
    for seconds in (spec.metadata["minimum"], spec.default, spec.metadata["maximum"]):
        policy = webhooks.WebhookPolicy(timeout_seconds=float(seconds))
        assert webhooks.claim_seconds(policy) > 2 * policy.timeout_seconds


def test_webhooks_ignore_http_proxy_variables(
    site: Site, store: Store, receiver: Receiver, secret: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The README says HTTP_PROXY variables are ignored; the webhook client honoured them
    (httpx's trust_env), sending every signed message through whatever they named."""
    proxy = Receiver(secret)
    try:
        for name in ("NO_PROXY", "no_proxy"):
            monkeypatch.delenv(name, raising=False)
        proxy_url = proxy.url.split("/hook")[0]
        for name in ("HTTP_PROXY", "http_proxy", "HTTPS_PROXY", "ALL_PROXY"):
            monkeypatch.setenv(name, proxy_url)
        stored_day(site, store)
        now = utcnow()
        store.add_endpoint(EndpointSpec(receiver.url, "org", "org", SECRET_ENV), now)
        kept = [item.item_id for item in store.kept_items(feed="a")]
        webhooks.enqueue_items(store, kept, FAST, now)
        result = webhooks.deliver_due(store, FAST, now=now)
    finally:
        proxy.stop()
    assert result.delivered == 2
    assert proxy.seen == [] and len(receiver.seen) == 2
    assert not webhooks.webhook_client(FAST).trust_env
