-- Which version of the headline tokeniser made the stored tokens (items.title_norm, their
-- simhash and the title keys made from them). feedmd/store/headline_tokens.py re-tokenises
-- the stored items, with their keys, when feedmd's tokeniser is newer
-- (fingerprints/headlines.py HEADLINE_TOKENS_VERSION). No row means version 1: the tokens of
-- every item stored before this migration. The table starts empty, like every other, so a
-- new store can be the destination of `feedmd store copy`.
CREATE TABLE headline_tokens (version INTEGER NOT NULL);
