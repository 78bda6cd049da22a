-- feedmd initial schema. Append-only: later changes go in 0002_..., never edit this file.

CREATE TABLE orgs (
    id          INTEGER PRIMARY KEY,
    name        TEXT NOT NULL UNIQUE,
    created_at  TEXT NOT NULL
);

CREATE TABLE feeds (
    id               INTEGER PRIMARY KEY,
    org_id           INTEGER NOT NULL REFERENCES orgs(id),
    name             TEXT NOT NULL UNIQUE,
    url              TEXT NOT NULL,
    title            TEXT NOT NULL DEFAULT '',
    poll_minutes     REAL NOT NULL,
    etag             TEXT,
    last_modified    TEXT,
    last_fetched_at  TEXT,
    last_status      TEXT,
    last_http_status INTEGER,
    last_error       TEXT
);

CREATE TABLE runs (
    id             INTEGER PRIMARY KEY,
    started_at     TEXT NOT NULL,
    finished_at    TEXT,
    as_of          TEXT NOT NULL,
    status         TEXT NOT NULL CHECK (status IN ('running', 'ok', 'partial', 'failed', 'abandoned')),
    settings_json  TEXT NOT NULL,
    report_json    TEXT
);

-- One body per scraped URL and org: what readers get (markdown) and what is fingerprinted.
CREATE TABLE bodies (
    id                INTEGER PRIMARY KEY,
    org_id            INTEGER NOT NULL REFERENCES orgs(id),
    url_hash          TEXT NOT NULL,
    url               TEXT NOT NULL,
    fetched_at        TEXT NOT NULL,
    http_status       INTEGER,
    content_type      TEXT,
    etag              TEXT,
    last_modified     TEXT,
    markdown          TEXT NOT NULL DEFAULT '',
    prose             TEXT NOT NULL DEFAULT '',
    prose_chars       INTEGER NOT NULL DEFAULT 0,
    digest            TEXT,
    no_digest_reason  TEXT,
    extractor         TEXT NOT NULL,
    settings_version  TEXT NOT NULL,
    UNIQUE (org_id, url_hash)
);

-- Every entry ever seen, once per feed, with the decision taken on it and why.
CREATE TABLE items (
    id               INTEGER PRIMARY KEY,
    run_id           INTEGER NOT NULL REFERENCES runs(id),
    feed_id          INTEGER NOT NULL REFERENCES feeds(id),
    org_id           INTEGER NOT NULL REFERENCES orgs(id),
    entry_id         TEXT NOT NULL,
    link             TEXT NOT NULL,
    link_resolution  TEXT NOT NULL,
    url_raw          TEXT NOT NULL,
    url              TEXT,
    url_hash         TEXT,
    title_raw        TEXT NOT NULL,
    title_norm       TEXT NOT NULL,
    simhash          INTEGER NOT NULL,      -- signed 64-bit (NOTES.md: INTEGER overflows past 2**63)
    publisher        TEXT NOT NULL,
    summary          TEXT NOT NULL DEFAULT '',
    published_at     TEXT NOT NULL,
    fetched_at       TEXT NOT NULL,
    stage            TEXT NOT NULL CHECK (stage IN ('stage1', 'scrape', 'stage2')),
    decision         TEXT NOT NULL CHECK (decision IN ('kept', 'duplicate', 'failed')),
    rule             TEXT,
    score            REAL,
    threshold        REAL,
    matched_item_id  INTEGER REFERENCES items(id),
    evidence_json    TEXT NOT NULL DEFAULT '{}',
    error            TEXT,
    window_hours     REAL NOT NULL,
    scope            TEXT NOT NULL,
    body_id          INTEGER REFERENCES bodies(id),
    UNIQUE (feed_id, entry_id)
);

CREATE INDEX items_window ON items (org_id, decision, published_at);
CREATE INDEX items_feed_window ON items (feed_id, decision, published_at);
CREATE INDEX items_url_hash ON items (org_id, url_hash);
CREATE INDEX items_matched ON items (matched_item_id);

CREATE TABLE deliveries (
    id            INTEGER PRIMARY KEY,
    item_id       INTEGER NOT NULL REFERENCES items(id),
    run_id        INTEGER NOT NULL REFERENCES runs(id),
    target        TEXT NOT NULL,
    status        TEXT NOT NULL CHECK (status IN ('pending', 'delivered', 'failed')),
    attempts      INTEGER NOT NULL DEFAULT 0,
    created_at    TEXT NOT NULL,
    delivered_at  TEXT,
    last_error    TEXT,
    UNIQUE (item_id, target)
);
