-- Run leases: two `feedmd run` on one database (or `run` beside `serve`) never work on the
-- same org at once. A run takes one row per org of its configuration in one IMMEDIATE
-- transaction, renews `expires_at` while it works, and deletes its rows when it ends. A
-- row whose process is gone (same host, pid not alive) or whose expiry has passed is
-- stale and taken over. Append-only: later changes go in a new file.
CREATE TABLE run_leases (
    org_id       INTEGER PRIMARY KEY REFERENCES orgs(id),
    run_id       INTEGER NOT NULL REFERENCES runs(id),
    owner        TEXT NOT NULL,         -- host:pid:random, unique per run
    host         TEXT NOT NULL,
    pid          INTEGER NOT NULL,
    acquired_at  TEXT NOT NULL,
    expires_at   TEXT NOT NULL
);

CREATE INDEX run_leases_run ON run_leases (run_id);

-- A run killed after storing its items but before delivering them is marked 'abandoned'
-- by the next run of its orgs, which delivers those items and records itself here (so the
-- next run after that does not deliver them again).
ALTER TABLE runs ADD COLUMN recovered_by INTEGER REFERENCES runs(id);

-- Runs that failed or were abandoned before this migration are not recovered: their items
-- are old news by now (they mark themselves, which means "nothing left to deliver").
UPDATE runs SET recovered_by = id WHERE status IN ('failed', 'abandoned');
