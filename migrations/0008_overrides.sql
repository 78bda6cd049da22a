-- Reviewers' overrides of a dedup decision, from the review page of `feedmd serve`.
-- 'not_duplicate': item_id was wrongly merged into other_item_id; it is restored (kept) and
-- the pair is never merged again. 'merge': item_id is a missed duplicate of other_item_id
-- (the canonical); it is marked duplicate and later runs merge the pair.
-- Items are referenced by id; later runs and replays read the pair back as (feed name,
-- entry id) keys through the items (an entry keeps its key across runs and replays).
-- `previous_json` keeps the decision the override replaced (decision, stage, rule, score,
-- threshold, matched item), so the trail shows what was corrected and nothing is lost.
-- Append-only: later changes go in a new file.
CREATE TABLE overrides (
    id             INTEGER PRIMARY KEY,
    kind           TEXT NOT NULL CHECK (kind IN ('not_duplicate', 'merge')),
    org_id         INTEGER NOT NULL REFERENCES orgs(id),
    item_id        INTEGER NOT NULL REFERENCES items(id),
    other_item_id  INTEGER NOT NULL REFERENCES items(id),
    previous_json  TEXT NOT NULL,
    created_by     TEXT NOT NULL,
    created_at     TEXT NOT NULL,
    CHECK (item_id != other_item_id)
);

CREATE INDEX overrides_item ON overrides (item_id);
CREATE INDEX overrides_other_item ON overrides (other_item_id);
