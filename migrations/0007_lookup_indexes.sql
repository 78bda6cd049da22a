-- Indexes for lookups every run makes (found by EXPLAIN QUERY PLAN in review):
-- pages another org stored (bodies by url_hash alone), items of one run (recovery, dry
-- run, reports), and window queries by publication time across orgs (stale bodies).
CREATE INDEX bodies_url_hash ON bodies (url_hash);
CREATE INDEX items_run ON items (run_id);
CREATE INDEX items_published ON items (published_at);
