-- Headline token-pair keys (issue 13, feedmd/store/title_pairs.py): stage 1's Jaccard and
-- containment candidates of a new headline come from the pairs of its first tokens in a
-- frozen order, instead of counting every token's postings (which grew with the window:
-- ~2.1 s of a 20-entry run at 740,000 stored items). Each row carries the item's
-- normalised title and simhash, so the candidates are checked without reading items.
--
-- A kept non-CJK item of n distinct tokens is filed under every pair of its first
-- n - a(n) + 2 tokens, ordered longest first then by code point, where
-- a(n) = ceil(3n/5), at most 5 once n >= 5 (title_pairs.rule_overlap). A pair key is
-- "first second" in that order. Rows are written where title_keys are (keys.py).
CREATE TABLE title_pairs (
    org_id       INTEGER NOT NULL,
    key          TEXT NOT NULL,
    published_at TEXT NOT NULL,
    item_id      INTEGER NOT NULL,
    tokens       TEXT NOT NULL,
    simhash      INTEGER NOT NULL,
    PRIMARY KEY (org_id, key, published_at, item_id)
) WITHOUT ROWID;

-- The pairs of the kept items already keyed: from their distinct tokens (title_keys kind
-- 0, one row per token), ranked in the frozen order, cut to the prefix, paired.
INSERT INTO title_pairs (org_id, key, published_at, item_id, tokens, simhash)
WITH ranked AS (
    SELECT org_id, published_at, item_id, key AS token,
           ROW_NUMBER() OVER (PARTITION BY item_id ORDER BY LENGTH(key) DESC, key) AS position,
           COUNT(*) OVER (PARTITION BY item_id) AS size
    FROM title_keys WHERE kind = 0
),
prefix AS (
    SELECT org_id, published_at, item_id, token, position FROM ranked
    WHERE position <= size + 2 - CASE
        WHEN size >= 5 AND (3 * size + 4) / 5 > 5 THEN 5 ELSE (3 * size + 4) / 5 END
)
SELECT a.org_id, a.token || ' ' || b.token, a.published_at, a.item_id, i.title_norm, i.simhash
FROM prefix a
JOIN prefix b ON b.item_id = a.item_id AND b.position > a.position
JOIN items i ON i.id = a.item_id;
