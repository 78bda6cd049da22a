"""Review corrections reach every webhook endpoint, once per state change (issue 14).

When an override makes an item kept again ("Not a duplicate"), every endpoint of its feed
or org gets it, whatever its mode, and again each time a later override makes it kept
again (merge -> restore -> merge -> restore sends it twice):

- a per-item endpoint gets a new message (a new webhook-id), queued under the override:
  the item's earlier message, delivered or cancelled by a merge, does not stand in its way;
- a batch endpoint gets a correction batch keyed on the override, carrying the item (the
  run's own batch, sent long ago, does not swallow it), with ``override_id`` in its data.

Queuing the same override again queues nothing (the store's keys). A merge sends nothing:
it cancels the merged item's messages not yet sent (``Store.merge_item``).
"""

from __future__ import annotations

from datetime import datetime

from feedmd.delivery import webhooks
from feedmd.delivery.render import json_item
from feedmd.store import Store


def enqueue_correction(
    store: Store, item_id: int, override_id: int, retry_hours: float, now: datetime
) -> int:
    """Queue the item, made kept by override ``override_id``, for every endpoint of its
    feed or org: a message per per-item endpoint, a correction batch per batch endpoint.
    Returns how many messages were new."""
    targets = store.endpoints_for_items([item_id])
    items = store.items_by_id([item_id])
    if not items:
        return 0  # not kept (anymore): nothing to send
    (item,) = items
    rendered = json_item(item)
    body = webhooks.payload(rendered, now)
    messages = [
        (item_id, endpoint_id, webhooks.new_message_id(), body)
        for endpoint_id in targets.get(item_id, [])
    ]
    queued = store.enqueue(messages, now, retry_hours, override_id) if messages else 0
    batches = [
        (
            endpoint_id,
            run_id,
            webhooks.new_message_id(),
            webhooks.batch_payload(run_id, [rendered], now, override_id),
            members,
        )
        for (endpoint_id, run_id), members in sorted(store.batches_for_items([item_id]).items())
    ]
    if batches:
        queued += store.enqueue_batches(batches, now, retry_hours, override_id)
    return queued
