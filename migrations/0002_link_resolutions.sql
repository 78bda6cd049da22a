-- Redirect links resolved over HTTP (new-format Google News ids), so each is resolved once:
-- the same article link reaches us from many Google News searches.
CREATE TABLE link_resolutions (
    link         TEXT PRIMARY KEY,
    url          TEXT NOT NULL,
    method       TEXT NOT NULL,
    resolved_at  TEXT NOT NULL
);
