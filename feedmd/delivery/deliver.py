"""Deliver: kept items as JSON Feed 1.1 and Atom 1.0 files, and webhooks.

Rendering lives in ``feedmd/delivery/render.py`` (shared with export, serve and the webhook
payloads). ``deliver`` is step 6 of the pipeline: it stores the configured
visibility and webhook endpoints, rewrites the files of the feeds that gained items
(atomically: temporary file, then rename), queues the new kept items for every endpoint of
their feed or org (one message per item, or one per run for a batch endpoint), makes one
delivery pass, and returns the counts of both for the run report.
"""

from __future__ import annotations

import os
import secrets
from collections.abc import Sequence
from datetime import datetime
from pathlib import Path

from feedmd.delivery import webhooks
from feedmd.delivery.render import DEFAULT_PAGE_SIZE, atom_feed, file_meta, json_bytes, json_feed
from feedmd.models import Delivered, WebhookCounts
from feedmd.settings.config import Config
from feedmd.store import FeedRow, OutputItem, Store
from feedmd.timeutil import utcnow

FILES_TARGET = "files"


def write_feed_files(
    directory: str | os.PathLike[str], feed: FeedRow, items: Sequence[OutputItem], base_url: str
) -> list[Path]:
    """Write ``<feed>.json`` and ``<feed>.atom`` into ``directory``; return their paths."""
    folder = Path(directory)
    folder.mkdir(parents=True, exist_ok=True)
    meta = file_meta(feed, base_url)
    json_path = folder / f"{feed.name}.json"
    atom_path = folder / f"{feed.name}.atom"
    write_atomically(json_path, json_bytes(json_feed(meta, items)))
    write_atomically(atom_path, atom_feed(meta, items))
    return [json_path, atom_path]


def write_atomically(path: Path, data: bytes) -> None:
    """Write ``data`` to ``path`` so a reader sees the old file or the new one, never half.

    The file gets the mode of a normal write (0666 less the umask: 0644 usually), so a web
    server running as another user can read the output folder (``mkstemp`` would give 0600).
    """
    temporary = path.parent / f".{path.name}.{secrets.token_hex(6)}.tmp"
    handle = os.open(temporary, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o666)
    try:
        with os.fdopen(handle, "wb") as out:
            out.write(data)
        os.replace(temporary, path)
    except BaseException:
        temporary.unlink(missing_ok=True)
        raise


def publish(
    store: Store,
    run_id: int,
    kept: Sequence[int],
    directory: str,
    base_url: str,
    now: datetime,
    page_size: int = DEFAULT_PAGE_SIZE,
) -> int:
    """Rewrite the output files of every feed that gained items and record the deliveries.

    Returns how many items were delivered for the first time (0 without an output folder).
    """
    if not directory or not kept:
        return 0
    for name in store.feeds_of_items(kept):
        feed = store.find_feed(name)
        if feed is not None:
            items = store.kept_items(feed=name, limit=page_size)
            write_feed_files(directory, feed, items, base_url)
    return store.record_deliveries(run_id, kept, FILES_TARGET, now)


def refresh_files(
    store: Store, config: Config, item_ids: Sequence[int], output_dir: str | None = None
) -> None:
    """Rewrite the files of the feeds whose items' events changed without the feeds gaining
    an item: the feeds of items placed in events late (``feedmd/events/catchup.py``) and of
    the other members of their events. No delivery is recorded and no webhook is sent."""
    directory = output_dir or config.output.directory
    if not directory or not item_ids:
        return
    page_size = int(getattr(config.settings, "feed_page_size", DEFAULT_PAGE_SIZE))
    members = set(item_ids)
    for event in {info.event_id for info in store.events_of(item_ids).values()}:
        members.update(store.event_member_ids(event))
    for name in store.feeds_of_items(sorted(members)):
        feed = store.find_feed(name)
        if feed is not None:
            items = store.kept_items(feed=name, limit=page_size)
            write_feed_files(directory, feed, items, config.output.base_url)


def deliver(
    store: Store,
    config: Config,
    run_id: int,
    kept: Sequence[int],
    now: datetime,
    output_dir: str | None = None,
) -> Delivered:
    """Step 6: files, then webhooks. Returns the items newly written to files (an int) with
    the webhook counts attached.

    ``kept`` may hold a killed run's recovered items beside this run's: batches group items
    by the run that stored them, so the dead run's batch is found again, not sent twice.
    Webhook bookkeeping runs on the clock, not on ``now``: a replayed day (``--now``) still
    signs with the real time, which receivers check against theirs.
    """
    sync_configuration(store, config)
    settings = config.settings
    page_size = int(getattr(settings, "feed_page_size", DEFAULT_PAGE_SIZE))
    directory = output_dir or config.output.directory
    written = publish(store, run_id, kept, directory, config.output.base_url, now, page_size)
    policy = webhooks.policy_from(settings)
    queued = webhooks.enqueue_items(store, kept, policy, utcnow())
    sent = webhooks.deliver_due(store, policy)
    return Delivered(written, WebhookCounts(queued, sent.delivered, sent.failed_attempts))


def sync_configuration(store: Store, config: Config) -> None:
    """Store what the configuration says about delivery: which feeds are public, each
    feed's event_mode, and the webhook endpoints (so ``feedmd serve --db`` alone keeps
    delivering after a restart)."""
    store.set_public({feed.name: bool(getattr(feed, "public", False)) for feed in config.feeds})
    store.set_event_modes({feed.name: feed.event_mode for feed in config.feeds})
    store.sync_endpoints(webhooks.endpoint_specs(config), utcnow())
