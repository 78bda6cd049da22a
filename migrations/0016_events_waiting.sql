-- Events caught up (issue 19, docs/events.md "Caught up later"): kept items waiting for an
-- event decision. A run writes a row for each item it kept while the event model could not
-- load or encode (events on), and a reviewer's "Not a duplicate" writes one for the item it
-- restores; later runs of the org with events on decide them oldest first, up to
-- `event_catchup_per_run` a run, and delete the rows in the same transaction as the
-- decisions. `published_at` is copied from the item so the oldest come first from the index.
CREATE TABLE event_pending (
    item_id       INTEGER NOT NULL,
    org_id        INTEGER NOT NULL,
    published_at  TEXT NOT NULL,
    reason        TEXT NOT NULL,
    created_at    TEXT NOT NULL,
    PRIMARY KEY (item_id)
);

CREATE INDEX event_pending_order ON event_pending (org_id, published_at, item_id);
