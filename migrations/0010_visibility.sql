-- The visibility log behind `feedmd export --since CURSOR` and `/orgs/NAME.jsonl?since=`:
-- one row each time an item becomes visible as kept, either when its run stores it kept or
-- when a reviewer restores it ("Not a duplicate"). `seq` only grows (AUTOINCREMENT never
-- reuses a value), and the triggers write the row inside the transaction that changes the
-- item, so a reader that sees the change sees its row, and SQLite's one writer at a time
-- makes commit order and `seq` order the same: a cursor "every row up to seq N" never
-- skips a row committed later with a smaller seq.
-- An item merged away later keeps its old rows but is no longer kept: a pull shows only
-- items kept now. An item restored after a pull gets a new row, so the next pull shows it.
-- Append-only: later changes go in a new file.
-- Only the triggers below write it, from an items row, so item_id and org_id always name
-- existing rows (items are never deleted): no REFERENCES, whose checks would cost every
-- run's insert of kept items again. The triggers cost about 15-20 µs per kept item inserted
-- (20,000 items, two thirds kept, one transaction: about 0.3 s without, 0.5 s with, on the
-- shared 2-core dev machine), small beside a run's fetching and scraping.
CREATE TABLE visibility (
    seq      INTEGER PRIMARY KEY AUTOINCREMENT,
    item_id  INTEGER NOT NULL,
    org_id   INTEGER NOT NULL,
    reason   TEXT NOT NULL CHECK (reason IN ('kept', 'restored', 'existing'))
);

CREATE INDEX visibility_org_seq ON visibility (org_id, seq);

-- Items kept before this migration, in the order their runs stored them.
INSERT INTO visibility (item_id, org_id, reason)
    SELECT id, org_id, 'existing' FROM items WHERE decision = 'kept' ORDER BY run_id, id;

CREATE TRIGGER visibility_on_insert AFTER INSERT ON items
    WHEN NEW.decision = 'kept'
BEGIN
    INSERT INTO visibility (item_id, org_id, reason) VALUES (NEW.id, NEW.org_id, 'kept');
END;

CREATE TRIGGER visibility_on_restore AFTER UPDATE OF decision ON items
    WHEN NEW.decision = 'kept' AND OLD.decision != 'kept'
BEGIN
    INSERT INTO visibility (item_id, org_id, reason) VALUES (NEW.id, NEW.org_id, 'restored');
END;
