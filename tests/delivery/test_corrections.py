"""Review corrections reach every webhook endpoint, per-item and batch, once per state
change (issue 14): real runs, real overrides, real receivers on 127.0.0.1 that verify every
signature (tests/delivery/test_webhooks.py's ``Receiver``)."""

from __future__ import annotations

import dataclasses
import json
from collections.abc import Iterator
from typing import Any

import pytest
from conftest import FeedItemSpec, Site, article_html, at, make_config, rss, story
from loopback import FAST, SECRET_ENV, Receiver

from feedmd.delivery import overrides, webhooks
from feedmd.delivery.corrections import enqueue_correction
from feedmd.pipeline import run
from feedmd.settings.config import WebhookConfig
from feedmd.store import Store
from feedmd.timeutil import utcnow

pytestmark = pytest.mark.both_backends

POPE = "Pope Leo to undergo surgery for small growth on his lung"


@pytest.fixture
def receivers(monkeypatch: pytest.MonkeyPatch) -> Iterator[tuple[Receiver, Receiver]]:
    """A per-item receiver and a batch receiver sharing one secret."""
    secret = webhooks.new_secret()
    monkeypatch.setenv(SECRET_ENV, secret)
    per_item, batch = Receiver(secret), Receiver(secret)
    yield per_item, batch
    per_item.stop()
    batch.stop()


def day(site: Site, store: Store, per_item: Receiver, batch: Receiver) -> dict[str, int]:
    """A run that keeps the Pope story and a ferry story and drops a copy of the Pope
    story; both endpoints of org 'org' get the run's kept items. Item ids by role."""
    first = site.put("http://four.example/pope", article_html(POPE, story("vatican")))
    copy = site.put("http://six.example/pope", article_html(POPE, story("rome")))
    ferry = site.put("http://other.example/ferry", article_html("Ferry", story("ferry")))
    feed = site.put(
        "http://feeds.example/a.xml",
        rss(
            [
                FeedItemSpec(POPE, first, at(9)),
                FeedItemSpec(POPE + " - Station Six", copy, at(10)),
                FeedItemSpec("Harbour council approves new ferry terminal budget", ferry, at(11)),
            ]
        ),
    )
    hooks = (
        WebhookConfig(url=per_item.url, org="org", secret_env=SECRET_ENV),
        WebhookConfig(url=batch.url, org="org", secret_env=SECRET_ENV, batch=True),
    )
    config = dataclasses.replace(make_config([("org", "a", feed)], site.start()), webhooks=hooks)
    run(store, config, now=at(12))
    ids = {
        str(row["url_raw"]).split("/")[2]: int(row["id"])
        for row in store._db.query("SELECT id, url_raw FROM items")
    }
    return {"kept": ids["four.example"], "copy": ids["six.example"], "ferry": ids["other.example"]}


def bodies(receiver: Receiver) -> list[dict[str, Any]]:
    assert all(seen["valid"] for seen in receiver.seen)
    return [json.loads(seen["body"]) for seen in receiver.seen]


def items_of(receiver: Receiver) -> list[str]:
    """The titles each message carried, one list entry per message."""
    out = []
    for body in bodies(receiver):
        data = body["data"]
        titles = [i["title"] for i in data["items"]] if "items" in data else [data["title"]]
        out.append(" | ".join(sorted(titles)))
    return out


def test_merge_restore_chains_send_the_kept_item_each_time(
    site: Site, store: Store, receivers: tuple[Receiver, Receiver]
) -> None:
    per_item, batch = receivers
    ids = day(site, store, per_item, batch)
    assert len(per_item.seen) == 2 and len(batch.seen) == 1  # the run's own messages

    copy_title = POPE + " - Station Six"
    for state_change in range(1, 4):
        record = overrides.restore(store, ids["copy"], "alice", utcnow(), retry_hours=1)
        # queuing the same change again adds nothing: once per state change
        assert enqueue_correction(store, ids["copy"], record.id, 1, utcnow()) == 0
        assert webhooks.deliver_due(store, FAST).delivered == 2
        assert items_of(per_item)[-1] == copy_title
        last = bodies(batch)[-1]
        assert last["type"] == "items.kept"
        assert last["data"]["override_id"] == record.id
        assert [i["title"] for i in last["data"]["items"]] == [copy_title]
        assert len(per_item.seen) == 2 + state_change
        assert len(batch.seen) == 1 + state_change
        # "Merge" sends nothing
        overrides.merge(store, ids["copy"], ids["kept"], "bob", utcnow())
        assert webhooks.deliver_due(store, FAST).delivered == 0

    # every message its own webhook-id, every retry-free delivery signed
    ids_seen = [seen["id"] for seen in per_item.seen + batch.seen]
    assert len(set(ids_seen)) == len(ids_seen) == (2 + 3) + (1 + 3)


def test_a_restore_undone_before_delivery_is_cancelled_then_sent_on_the_next(
    site: Site, store: Store, receivers: tuple[Receiver, Receiver]
) -> None:
    per_item, batch = receivers
    ids = day(site, store, per_item, batch)
    overrides.restore(store, ids["copy"], "alice", utcnow(), retry_hours=1)
    overrides.merge(store, ids["copy"], ids["kept"], "bob", utcnow())
    assert webhooks.deliver_due(store, FAST).delivered == 0  # both cancelled
    cancelled = [
        row
        for row in store.list_deliveries()
        if row.status == "failed" and row.item_id == ids["copy"]
    ]
    assert len(cancelled) == 2 and all("cancelled" in (r.last_error or "") for r in cancelled)
    overrides.restore(store, ids["copy"], "alice", utcnow(), retry_hours=1)
    assert webhooks.deliver_due(store, FAST).delivered == 2
    assert items_of(per_item)[-1] == POPE + " - Station Six"
    assert len(batch.seen) == 2


def test_a_kept_item_merged_then_restored_is_sent_again(
    site: Site, store: Store, receivers: tuple[Receiver, Receiver]
) -> None:
    """The issue's case: the item's first message exists (sent, or cancelled by the
    merge); UNIQUE (item_id, target) no longer keeps the restored item from being sent."""
    per_item, batch = receivers
    ids = day(site, store, per_item, batch)
    overrides.merge(store, ids["ferry"], ids["kept"], "bob", utcnow())
    overrides.restore(store, ids["ferry"], "alice", utcnow(), retry_hours=1)
    assert webhooks.deliver_due(store, FAST).delivered == 2
    ferry = "Harbour council approves new ferry terminal budget"
    assert items_of(per_item).count(ferry) == 2
    assert items_of(batch)[-1] == ferry
