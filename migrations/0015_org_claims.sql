-- Worker claims (`feedmd worker`): any number of worker processes, on any number of
-- machines, share one database; a worker claims one org at a time, runs its due feeds and
-- gives the claim back. The org is the unit because two runs must never decide one org's
-- entries at once (the run lease serialises them too; the claim keeps a second worker from
-- even trying). One row per org, made by the first worker that sees the org.
--
-- owner is NULL while the org is free. A held claim expires at expires_at unless its worker
-- renews it; a claim whose worker died (SIGKILL, power loss) is taken over after that, or at
-- once on the same host when its pid is gone. Taking over a claim that was never given back
-- sets pending_recovery: the org is then run even with no feed due, so the dead worker's
-- stored but undelivered items are delivered (the run lease's recovery). not_before holds a
-- free org back after a failed run (until its next poll interval), as `feedmd serve` does.
-- Append-only: later changes go in a new file. Portable SQL (SQLite and PostgreSQL).
CREATE TABLE org_claims (
    org_id            INTEGER PRIMARY KEY REFERENCES orgs(id),
    owner             TEXT,              -- worker:random, unique per claim; NULL when free
    worker            TEXT,              -- the worker id shown to people (default host:pid)
    host              TEXT,
    pid               INTEGER,
    claimed_at        TEXT,
    expires_at        TEXT,
    not_before        TEXT,
    pending_recovery  INTEGER NOT NULL DEFAULT 0
);
