"""The store: the only code in feedmd that holds SQL or imports sqlite3 / sqlite_utils.

``open_store(database)`` opens (and migrates) the SQLite file, or the PostgreSQL database
of a ``postgresql://`` URL (``dialect.py``), and returns a ``Store``: one
facade whose methods are grouped by job in this package's modules. The connection is
private to the package; every other module sees plain data (``feedmd.models``)::

    schema.py   connect, transactions, migrations
    dialect.py  the two backends behind one connection interface
    window.py   what steps 1-4 read (feed specs, known entries, snapshot, pages)
    runs.py     a run's writes (feeds, start / finish / fail, persist, fingerprints)
    leases.py   run leases and recovery of killed runs
    claims.py   which worker (``feedmd worker``) holds which org, until when
    outputs.py  what deliver / serve / export read; delivery records
    queue.py    webhook endpoints and the webhook delivery queue
    audit.py    explain, the review page, reviewers' overrides
    events.py   event vectors and decisions, the event window, "not the same event"
    event_pending.py  kept items waiting for an event (caught up by later runs)
    history.py  what replay, the dry run and the evaluations read back
    retries.py  failed items' retries: due items, attempts, recovered decisions
    headline_tokens.py  stored headline tokens re-made when the tokeniser changes
    keys.py     the candidate keys of kept items; candidates.py reads the window by them
                (headlines; title_pairs.py its token pairs), body_candidates.py (bodies)
    range_packs.py  window rows packed per range of item ids: the TLSH digests
                (digest_packs.py) and the event vectors (event_packs.py)
    seed.py     bulk loading of prepared items (the window benchmark, tests);
                bulk_load.py its staged key rows, sorted in on both cores

A change to the schema is one migration plus a change inside this folder.

The package is the store's interface: the rest of feedmd imports ``feedmd.store`` (the
``Store`` facade, ``open_store`` / ``connect_store`` and the plain rows and helpers listed
in ``__all__``), never a module inside it (tests/test_layers.py checks).

May import: ``feedmd.models``, ``feedmd.fingerprints``, ``feedmd.settings`` and the base
modules (errors, timeutil, ids, resources); nothing above (stages, sources, events,
delivery, pipeline, ...).
"""

from __future__ import annotations

from pathlib import Path

from feedmd.store.audit import OVERRIDE_RULE, Audit, ItemRow, Override, RunRow
from feedmd.store.claims import ClaimRow, Claims, OrgClaim
from feedmd.store.copy import copy_store, table_counts
from feedmd.store.dialect import POSTGRESQL, backend_of, sqlite_path
from feedmd.store.dialect import redact as display_database
from feedmd.store.event_pending import EventPending, PendingItem
from feedmd.store.event_seed import EventSeeding
from feedmd.store.events import EventMember, EventOverride, EventRow, Events, Ref
from feedmd.store.history import History, Outcome, StoredRun, copy_database
from feedmd.store.leases import LeaseHolder, Leases, RunLease
from feedmd.store.outputs import AlsoPublished, FeedRow, OutputItem, Outputs, hash_token
from feedmd.store.queue import EndpointSpec, PendingDelivery, Queue
from feedmd.store.retries import Retries
from feedmd.store.runs import RunWrites, StoredItems
from feedmd.store.schema import Migration, available_migrations, connect, has_table, open_database
from feedmd.store.seed import Seeding, SeedItem
from feedmd.store.window import WindowReads

__all__ = [
    "OVERRIDE_RULE",
    "POSTGRESQL",
    "AlsoPublished",
    "ClaimRow",
    "EndpointSpec",
    "EventMember",
    "EventOverride",
    "EventRow",
    "FeedRow",
    "ItemRow",
    "LeaseHolder",
    "OrgClaim",
    "Outcome",
    "OutputItem",
    "Override",
    "PendingDelivery",
    "PendingItem",
    "Ref",
    "RunLease",
    "RunRow",
    "SeedItem",
    "Store",
    "StoredItems",
    "StoredRun",
    "available_migrations",
    "backend_of",
    "connect",
    "connect_store",
    "copy_database",
    "copy_store",
    "database_exists",
    "display_database",
    "hash_token",
    "open_store",
    "table_counts",
]


def database_exists(database: str | Path) -> bool:
    """Whether a store is there: the SQLite file exists, or the PostgreSQL database
    answers and has been migrated at least once (commands that only read refuse others)."""
    if backend_of(str(database)) != POSTGRESQL:
        return Path(sqlite_path(str(database))).exists()
    db = connect(database)
    try:
        return has_table(db.conn, "schema_migrations")
    finally:
        db.close()


class Store(
    WindowReads,
    RunWrites,
    Leases,
    Claims,
    Outputs,
    Queue,
    Audit,
    Events,
    EventSeeding,
    EventPending,
    History,
    Retries,
    Seeding,
):
    """The store as feedmd uses it (SQLite or PostgreSQL): one object, one private
    connection."""


def open_store(path: str | Path, migrations: list[Migration] | None = None) -> Store:
    """Open the store at ``path`` (a SQLite file, created if needed, or a
    ``postgresql://`` URL), apply every pending migration."""
    store = Store(open_database(path, migrations))
    store.sync_window_keys()
    return store


def connect_store(path: str | Path) -> Store:
    """Open the store at ``path`` without migrating it (serve's per-request connections,
    read-only commands)."""
    return Store(connect(path))
