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

-- The keys of items stored before this migration are filled on the first run after it
-- (Python computes them), in one transaction; this row says it is still to do.
CREATE TABLE window_keys_pending (one INTEGER PRIMARY KEY CHECK (one = 1));
INSERT INTO window_keys_pending (one) VALUES (1);
