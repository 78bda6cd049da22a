-- The window's TLSH digests packed as columns (issue 13): stage 2 compares every new body
-- with every digest of the window (at the similar-tier radius no key narrows that
-- exactly), and reading them one row each cost ~3 us a body, most of a run at 1M items.
-- A pack holds the digests of one org's kept items whose ids fall in one range of
-- PACK_ITEMS ids (feedmd/store/digest_packs.py), as blobs: item ids and feed ids (int64),
-- heads (checksum, length code, Q byte: 3 x n bytes) and body bit planes (4 x n uint64),
-- then the publication times (fixed width) for the packs the window cutoff cuts through.
-- body_digests stays the source: a pack is rebuilt from it whenever a row of its range
-- changes, and the newest range (not yet full) is read from body_digests directly.
CREATE TABLE digest_packs (
    org_id    INTEGER NOT NULL,
    pack      INTEGER NOT NULL,
    oldest    TEXT NOT NULL,
    newest    TEXT NOT NULL,
    records   INTEGER NOT NULL,
    width     INTEGER NOT NULL,
    item_ids  BLOB NOT NULL,
    feed_ids  BLOB NOT NULL,
    heads     BLOB NOT NULL,
    planes    BLOB NOT NULL,
    published BLOB NOT NULL,
    PRIMARY KEY (org_id, pack)
);

-- A range of one org's digests by item id: building a pack, reading the newest range.
CREATE INDEX body_digests_item ON body_digests (org_id, item_id);
