-- Retries of failed pages and failed feeds (issue 14). Append-only: later changes go in a
-- new file.

-- Per failed item, where its retries stand. `attempts` counts the page fetches that failed,
-- the first one included; `first_failed_at` is when the entry was first seen (the grace
-- period for 404 / 410 runs from it); `next_attempt_at` is when a run may fetch the page
-- again (NULL once recovered or given up); `given_up` says why the retries stopped.
CREATE TABLE item_retries (
    item_id           INTEGER PRIMARY KEY REFERENCES items(id),
    attempts          INTEGER NOT NULL,
    first_failed_at   TEXT NOT NULL,
    last_attempt_at   TEXT NOT NULL,
    last_http_status  INTEGER,
    last_error        TEXT,
    next_attempt_at   TEXT,
    given_up          TEXT,
    recovered_at      TEXT
);

CREATE INDEX item_retries_due ON item_retries (next_attempt_at)
    WHERE next_attempt_at IS NOT NULL;

-- Every fetch of a failed item's page: the first failure, each retry, the recovery.
CREATE TABLE item_attempts (
    id            INTEGER PRIMARY KEY,
    item_id       INTEGER NOT NULL REFERENCES items(id),
    run_id        INTEGER REFERENCES runs(id),
    attempted_at  TEXT NOT NULL,
    outcome       TEXT NOT NULL CHECK (outcome IN ('failed', 'recovered')),
    http_status   INTEGER,
    error         TEXT
);

CREATE INDEX item_attempts_item ON item_attempts (item_id);

-- Items that failed before this migration: one failed attempt each, due at once (a run
-- gives up those already outside their dedup window).
INSERT INTO item_retries (item_id, attempts, first_failed_at, last_attempt_at,
    last_http_status, last_error, next_attempt_at)
SELECT id, 1, fetched_at, fetched_at, json_extract(evidence_json, '$.http_status'), error,
    fetched_at
FROM items WHERE decision = 'failed';

INSERT INTO item_attempts (item_id, run_id, attempted_at, outcome, http_status, error)
SELECT id, run_id, fetched_at, 'failed', json_extract(evidence_json, '$.http_status'), error
FROM items WHERE decision = 'failed';

-- A feed whose fetch failed: how many fetches in a row failed, and when it is due again
-- (sooner than its poll interval, with backoff). Both cleared by a successful fetch.
ALTER TABLE feeds ADD COLUMN error_streak INTEGER NOT NULL DEFAULT 0;
ALTER TABLE feeds ADD COLUMN next_due_at TEXT;

-- Review corrections reach every endpoint once per state change (issue 14, part 3). A
-- message queued because a reviewer's override made an item kept again names that
-- override: per-item messages carry it in their target ('webhook:<endpoint>/override:<id>',
-- so UNIQUE (item_id, target) now means once per endpoint and state change), and a
-- correction batch is keyed on (endpoint, run, override) instead of (endpoint, run), so the
-- run's own batch no longer swallows it.
ALTER TABLE deliveries ADD COLUMN override_id INTEGER REFERENCES overrides(id);
DROP INDEX deliveries_batch_run;
CREATE UNIQUE INDEX deliveries_batch_run
    ON deliveries (endpoint_id, run_id, COALESCE(override_id, 0)) WHERE batch = 1;
