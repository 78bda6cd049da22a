-- PostgreSQL text of 0012_window_keys.sql (read that file for the keys and why).
-- title_keys.key is untyped on SQLite (a simhash block is an integer, a token text); here
-- it is TEXT and feedmd/store/keys.py binds every key as text on PostgreSQL (stored_key).
-- A key is only ever compared for equality and grouped, never ordered by value, so the
-- same rows answer the same lookups on both. The triggers are PL/pgSQL.

CREATE TABLE title_keys (
    org_id       BIGINT NOT NULL,
    kind         BIGINT NOT NULL,
    key          TEXT COLLATE "C" NOT NULL,
    published_at TEXT COLLATE "C" NOT NULL,
    item_id      BIGINT NOT NULL,
    n            BIGINT NOT NULL DEFAULT 1,
    PRIMARY KEY (org_id, kind, key, published_at, item_id)
);

CREATE TABLE body_keys (
    org_id       BIGINT NOT NULL,
    key          BIGINT NOT NULL,
    published_at TEXT COLLATE "C" NOT NULL,
    item_id      BIGINT NOT NULL,
    PRIMARY KEY (org_id, key, published_at, item_id)
);

CREATE TABLE body_digests (
    org_id       BIGINT NOT NULL,
    published_at TEXT COLLATE "C" NOT NULL,
    item_id      BIGINT NOT NULL,
    feed_id      BIGINT NOT NULL,
    tlsh         BYTEA NOT NULL,
    PRIMARY KEY (org_id, published_at, item_id)
);

CREATE INDEX items_entry_id ON items (entry_id);
CREATE INDEX items_body ON items (body_id);
CREATE INDEX bodies_settings_version ON bodies (settings_version);

CREATE TABLE window_keys_dirty (item_id BIGINT PRIMARY KEY);
INSERT INTO window_keys_dirty (item_id) SELECT id FROM items WHERE decision = 'kept';

CREATE FUNCTION items_keys_dirty() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    INSERT INTO window_keys_dirty (item_id) VALUES (NEW.id) ON CONFLICT DO NOTHING;
    RETURN NULL;
END;
$$;

CREATE TRIGGER items_keys_stored AFTER INSERT ON items
    FOR EACH ROW EXECUTE FUNCTION items_keys_dirty();
CREATE TRIGGER items_keys_changed AFTER UPDATE OF decision, body_id ON items
    FOR EACH ROW EXECUTE FUNCTION items_keys_dirty();

CREATE FUNCTION bodies_keys_dirty() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    INSERT INTO window_keys_dirty (item_id)
        SELECT id FROM items WHERE body_id = NEW.id ON CONFLICT DO NOTHING;
    RETURN NULL;
END;
$$;

CREATE TRIGGER bodies_keys_changed AFTER UPDATE OF digest, shingles ON bodies
    FOR EACH ROW EXECUTE FUNCTION bodies_keys_dirty();
