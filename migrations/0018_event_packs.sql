-- The window's event vectors packed many to a row (issue 19, docs/events.md "Cost"): a run
-- compares its new headlines with every vector of its scope's window, and reading them one
-- row each cost 0.3-0.8 s at 100,000 vectors (the database handing rows to Python). A pack
-- holds the vectors of one org's items of one model whose ids fall in one range of
-- PACK_ITEMS ids (feedmd/store/event_packs.py), as blobs: item ids and feed ids (int64),
-- publication times (fixed width, for the packs the window cutoff cuts through) and the
-- vectors (388 bytes each, as in item_events). item_events stays the source: a pack is
-- rebuilt in the transaction that writes a row of its range, and the newest range (not yet
-- full) is read from item_events directly.
--
-- Backfill: a pack is a concatenation of many rows' blobs, which portable SQL cannot
-- build; the table starts empty, every vector of a store upgraded with vectors stays
-- readable from item_events, and the first scan of an (org, model) packs its ranges in one
-- transaction (event_packs.behind / seal), as digest_packs (0013) does.
CREATE TABLE event_packs (
    org_id    INTEGER NOT NULL,
    model     TEXT NOT NULL,
    pack      INTEGER NOT NULL,
    oldest    TEXT NOT NULL,
    newest    TEXT NOT NULL,
    records   INTEGER NOT NULL,
    width     INTEGER NOT NULL,
    item_ids  BLOB NOT NULL,
    feed_ids  BLOB NOT NULL,
    published BLOB NOT NULL,
    vectors   BLOB NOT NULL,
    PRIMARY KEY (org_id, model, pack)
);

-- A range of one org's vectors of one model by item id: building a pack, reading the
-- newest range, the ends of the id span.
CREATE INDEX item_events_pack ON item_events (org_id, model, item_id);

-- Kept items with no event that never waited for one (kept while `events` was off, or
-- stored before migration 0016) are recorded as waiting by the next run with events on
-- (event_pending, reason 'unplaced'; docs/events.md "Caught up later"). event_checked
-- holds, per org, the largest item id looked at, so a run reads only the items stored
-- since (by the items' primary key), not the whole window. No row: nothing checked yet
-- (the first run with events on looks at every item once).
CREATE TABLE event_checked (
    org_id   INTEGER NOT NULL,
    item_id  INTEGER NOT NULL,
    PRIMARY KEY (org_id)
);
