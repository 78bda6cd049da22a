-- Candidate keys of the kept items, so that a run reads only the window items that can
-- match its new entries (issue 13) instead of loading the whole window.
--
-- title_keys: per kept item, by kind (feedmd/store/keys.py): 0 a headline token, 1-4 the
-- four 16-bit blocks of its simhash, 5 / 6 a word its sentence-case title writes
-- capitalised / lowercase mid-sentence (n times), 7 the lead token of a CJK headline,
-- 8 a character 3-gram of a CJK headline. body_keys: per kept item with a body digest, the
-- sampled shingle hashes (bodies.sample_keys). body_digests: its TLSH digest as 35 bytes
-- (with its feed, for the feed scope), scanned in publication order.
-- The window is an index range (org, kind, key, published_at >= cutoff); rows are written
-- when an item is stored kept, and follow overrides and refingerprinted bodies.
CREATE TABLE title_keys (
    org_id       INTEGER NOT NULL,
    kind         INTEGER NOT NULL,
    key          NOT NULL,
    published_at TEXT NOT NULL,
    item_id      INTEGER NOT NULL,
    n            INTEGER NOT NULL DEFAULT 1,
    PRIMARY KEY (org_id, kind, key, published_at, item_id)
) WITHOUT ROWID;

CREATE TABLE body_keys (
    org_id       INTEGER NOT NULL,
    key          INTEGER NOT NULL,
    published_at TEXT NOT NULL,
    item_id      INTEGER NOT NULL,
    PRIMARY KEY (org_id, key, published_at, item_id)
) WITHOUT ROWID;

CREATE TABLE body_digests (
    org_id       INTEGER NOT NULL,
    published_at TEXT NOT NULL,
    item_id      INTEGER NOT NULL,
    feed_id      INTEGER NOT NULL,
    tlsh         BLOB NOT NULL,
    PRIMARY KEY (org_id, published_at, item_id)
) WITHOUT ROWID;

-- Entry ids are looked up across the feeds of an org (org scope): UNIQUE (feed_id,
-- entry_id) cannot serve that.
CREATE INDEX items_entry_id ON items (entry_id);
-- The kept items of a body whose fingerprint changes (their body keys follow it), and the
-- bodies fingerprinted under other prose settings (each run asks; usually none): neither
-- may scan the window.
CREATE INDEX items_body ON items (body_id);
CREATE INDEX bodies_settings_version ON bodies (settings_version);

-- Items whose keys are to be (re)computed: every kept item stored before this migration,
-- and, through these triggers, every item stored or changed since (its decision or its
-- body), whoever wrote it. feedmd recomputes them (feedmd/store/keys.py sync_dirty) before
-- it reads the window, and at the end of a run's writes.
CREATE TABLE window_keys_dirty (item_id INTEGER PRIMARY KEY);
INSERT INTO window_keys_dirty (item_id) SELECT id FROM items WHERE decision = 'kept';
CREATE TRIGGER items_keys_stored AFTER INSERT ON items BEGIN
    INSERT OR IGNORE INTO window_keys_dirty (item_id) VALUES (NEW.id);
END;
CREATE TRIGGER items_keys_changed AFTER UPDATE OF decision, body_id ON items BEGIN
    INSERT OR IGNORE INTO window_keys_dirty (item_id) VALUES (NEW.id);
END;
CREATE TRIGGER bodies_keys_changed AFTER UPDATE OF digest, shingles ON bodies BEGIN
    INSERT OR IGNORE INTO window_keys_dirty (item_id)
        SELECT id FROM items WHERE body_id = NEW.id;
END;
