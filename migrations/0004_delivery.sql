-- Delivery: feeds served over HTTP (public or behind per-org bearer tokens) and signed
-- webhooks delivered at least once. Append-only: later changes go in a new file.

-- A feed marked public is served without a token; every other feed needs one of its org's.
ALTER TABLE feeds ADD COLUMN public INTEGER NOT NULL DEFAULT 0;

-- Bearer tokens per org. Only the SHA-256 of a token is stored: a leaked database does not
-- leak working tokens. The token itself is shown once, when it is created.
CREATE TABLE org_tokens (
    id          INTEGER PRIMARY KEY,
    org_id      INTEGER NOT NULL REFERENCES orgs(id),
    token_hash  TEXT NOT NULL UNIQUE,
    label       TEXT NOT NULL DEFAULT '',
    created_at  TEXT NOT NULL,
    revoked_at  TEXT
);

-- Webhook endpoints of an org or a feed. The signing secret is never stored: only the name
-- of the environment variable that holds it.
CREATE TABLE webhook_endpoints (
    id                    INTEGER PRIMARY KEY,
    url                   TEXT NOT NULL,
    scope                 TEXT NOT NULL CHECK (scope IN ('org', 'feed')),
    scope_name            TEXT NOT NULL,
    secret_env            TEXT NOT NULL,
    consecutive_failures  INTEGER NOT NULL DEFAULT 0,
    paused_until          TEXT,
    disabled_at           TEXT,
    disabled_reason       TEXT,
    created_at            TEXT NOT NULL,
    UNIQUE (url, scope, scope_name)
);

-- A webhook delivery is a row of `deliveries` with target 'webhook:<endpoint id>': its
-- message id (the webhook-id header, the same on every retry), the exact body sent on every
-- attempt, and its retry schedule. Rows with target 'files' keep these NULL.
ALTER TABLE deliveries ADD COLUMN endpoint_id INTEGER REFERENCES webhook_endpoints(id);
ALTER TABLE deliveries ADD COLUMN message_id TEXT;
ALTER TABLE deliveries ADD COLUMN payload TEXT;
ALTER TABLE deliveries ADD COLUMN next_attempt_at TEXT;
ALTER TABLE deliveries ADD COLUMN deadline_at TEXT;
ALTER TABLE deliveries ADD COLUMN last_attempt_at TEXT;
ALTER TABLE deliveries ADD COLUMN last_http_status INTEGER;

CREATE UNIQUE INDEX deliveries_message_id ON deliveries (message_id);
CREATE INDEX deliveries_due ON deliveries (endpoint_id, status, next_attempt_at);
