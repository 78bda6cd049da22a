-- Batch webhooks: an endpoint with `batch = true` receives one message per run carrying all
-- the run's new kept items of its scope, instead of one message per item.
-- Append-only: later changes go in a new file.

-- The endpoint's mode, from the configuration (updated like secret_env when it changes).
ALTER TABLE webhook_endpoints ADD COLUMN batch INTEGER NOT NULL DEFAULT 0;

-- A batch message is a row of `deliveries` like any webhook message (frozen body, one
-- message id for every retry, the same backoff and failure count), with `batch` = 1,
-- target 'webhook-batch:<endpoint id>', `run_id` the run that stored its items, and
-- `item_id` its lowest item id (the column is NOT NULL; the members are listed below).
ALTER TABLE deliveries ADD COLUMN batch INTEGER NOT NULL DEFAULT 0;

-- One batch per (endpoint, run), ever: a run killed after storing its items is recovered
-- by the next run, whose step 6 delivers those items again; the batch of the dead run must
-- then be found (INSERT OR IGNORE), not sent a second time under another webhook-id.
CREATE UNIQUE INDEX deliveries_batch_run ON deliveries (endpoint_id, run_id) WHERE batch = 1;

-- The items a batch message carries, so "which message took item X to endpoint E" stays a
-- query, as it is for per-item messages.
CREATE TABLE webhook_batch_items (
    delivery_id  INTEGER NOT NULL REFERENCES deliveries(id),
    item_id      INTEGER NOT NULL REFERENCES items(id),
    PRIMARY KEY (delivery_id, item_id)
) WITHOUT ROWID;

CREATE INDEX webhook_batch_items_item ON webhook_batch_items (item_id);
