-- The second body matcher (containment of word 5-gram shingles) needs each body's shingle
-- hashes: a sorted array of little-endian uint32 (feedmd/stages/bodies.py).
ALTER TABLE bodies ADD COLUMN shingles BLOB NOT NULL DEFAULT x'';
