-- Which prose lines each body printed, per host: a line printed on many pages of one host
-- is furniture (a standing disclaimer, a sign-off), not story, and is left out of the prose.
CREATE TABLE body_lines (
    body_id   INTEGER NOT NULL REFERENCES bodies(id) ON DELETE CASCADE,
    org_id    INTEGER NOT NULL REFERENCES orgs(id),
    host      TEXT NOT NULL,
    line_key  TEXT NOT NULL,
    PRIMARY KEY (body_id, line_key)
);

CREATE INDEX body_lines_host ON body_lines (org_id, host, line_key);
