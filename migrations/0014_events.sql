-- Events (issue 19, docs/events.md): coverage of one event by many outlets.
--
-- item_events: one row per kept item placed in an event by a run. `vector` is its headline
-- vector in the stored form of feedmd/events/vectors.py (a float32 scale and 384 int8
-- codes: 388 bytes); `event_id` is the item id of the event's first (canonical) item;
-- `joined_item_id` the item it matched (NULL for a canonical); `score` the cosine to it (or
-- to the best candidate a veto refused), `threshold` and `model` what decided, `veto` why
-- the best candidate was refused. org, feed and publication time are copied from the item
-- so that a run's window is one index range (org_id, published_at >= cutoff), read in
-- blocks in that order, never loaded whole.
-- Items are never deleted, so item ids need no REFERENCES checks on every run's insert
-- (as in 0010); rows are written in the run's one transaction with their items.
CREATE TABLE item_events (
    item_id         INTEGER NOT NULL,
    org_id          INTEGER NOT NULL,
    feed_id         INTEGER NOT NULL,
    published_at    TEXT NOT NULL,
    event_id        INTEGER NOT NULL,
    joined_item_id  INTEGER,
    score           REAL NOT NULL,
    threshold       REAL NOT NULL,
    model           TEXT NOT NULL,
    veto            TEXT,
    vector          BLOB NOT NULL,
    PRIMARY KEY (item_id)
);

CREATE INDEX item_events_window ON item_events (org_id, published_at, item_id);
CREATE INDEX item_events_event ON item_events (event_id);

-- Reviewers' "not the same event": item_id is split from event previous_event_id and
-- opens its own event. previous_json keeps the decision replaced (event, joined item,
-- score, threshold, model, veto), so the trail is complete. Append-only.
CREATE TABLE event_overrides (
    id                 INTEGER PRIMARY KEY,
    org_id             INTEGER NOT NULL,
    item_id            INTEGER NOT NULL,
    previous_event_id  INTEGER NOT NULL,
    previous_json      TEXT NOT NULL,
    created_by         TEXT NOT NULL,
    created_at         TEXT NOT NULL
);

CREATE INDEX event_overrides_item ON event_overrides (item_id);

-- A feed's event_mode from the configuration ('group' or 'one-per-event'), stored like its
-- public flag so that serve and a reviewer's rewrite of the files apply it too.
ALTER TABLE feeds ADD COLUMN event_mode TEXT NOT NULL DEFAULT 'group';
