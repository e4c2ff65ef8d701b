"""The S-* regret scenarios on a real PostgreSQL server, through the CLI:
capture → destructive statement → ``preimage restore`` → ``preimage score``,
plus pg_dump of original and restored databases compared."""

from __future__ import annotations

from typing import Any
from urllib.parse import quote

import pytest

import preimage

pytestmark = pytest.mark.postgres


def test_drop_tables_and_fakes_come_back(check: Any, db: Any, cli: Any, pg_dump: Any, store: Any) -> None:
    """S-drop-tables: DROP TABLE + re-create with fakes is undone: rows, ids, sequence, view."""
    db.sql("""
        CREATE TABLE companies (id serial PRIMARY KEY, name text NOT NULL UNIQUE,
                                founded date, CONSTRAINT name_len CHECK (length(name) > 1));
        CREATE TABLE executives (id serial PRIMARY KEY,
            company_id int NOT NULL REFERENCES companies(id) ON DELETE CASCADE,
            name text NOT NULL, salary numeric(12,2), profile jsonb DEFAULT '{}');
        CREATE INDEX executives_company ON executives (company_id);
        COMMENT ON TABLE executives IS 'C-level people';
        COMMENT ON COLUMN executives.salary IS 'yearly, USD';
        CREATE VIEW exec_view AS SELECT e.name, c.name AS company FROM executives e
            JOIN companies c ON c.id = e.company_id;
        INSERT INTO companies (name, founded) SELECT 'company ' || g, date '2000-01-01' + g
            FROM generate_series(1, 1206) g;
        INSERT INTO executives (company_id, name, salary, profile)
            SELECT 1 + g % 1206, 'exec ' || g, g * 1000.5, jsonb_build_object('n', g)
            FROM generate_series(1, 1196) g;
        DELETE FROM executives WHERE id % 100 = 0;
    """)
    before = pg_dump(db)
    seqs = {s: check.next_value(db, s) for s in ("companies_id_seq", "executives_id_seq")}
    backup = cli.capture(db.uri("tables=public.executives,public.companies"))
    db.sql("""
        DROP TABLE executives, companies CASCADE;
        CREATE TABLE companies (id serial PRIMARY KEY, name text NOT NULL UNIQUE,
                                founded date, CONSTRAINT name_len CHECK (length(name) > 1));
        CREATE TABLE executives (id serial PRIMARY KEY, company_id int REFERENCES companies(id),
                                 name text NOT NULL, salary numeric(12,2), profile jsonb);
        INSERT INTO companies (name) VALUES ('Fake Corp'), ('Acme Fake');
        INSERT INTO executives (company_id, name) VALUES (1, 'Fake Person');
    """)
    damaged, _ = preimage.score(backup, store=store)
    assert damaged.classes["content"].score < 0.1
    result = cli.restore(backup)
    assert result["undo_backup"]
    check.full_fidelity(cli, backup)
    check.same_dump(pg_dump(db), before)
    for seq, value in seqs.items():
        assert check.next_value(db, seq) == value
    assert db.sql("INSERT INTO companies (name) VALUES ('new one') RETURNING id").split()[0] == \
        str(seqs["companies_id_seq"])


def test_truncate_restart_identity_is_undone(check: Any, db: Any, cli: Any, pg_dump: Any) -> None:
    """S-truncate-identity: rows and the identity's last_value 1042 come back; next id is 1043."""
    db.sql("""
        CREATE TABLE orders (id bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
            customer text NOT NULL, total numeric(10,2) CHECK (total >= 0),
            created timestamptz NOT NULL DEFAULT now(),
            total_cents bigint GENERATED ALWAYS AS ((total * 100)::bigint) STORED);
        CREATE FUNCTION orders_audit() RETURNS trigger LANGUAGE plpgsql AS
            $$ BEGIN NEW.customer := trim(NEW.customer); RETURN NEW; END $$;
        CREATE TRIGGER orders_trim BEFORE INSERT OR UPDATE ON orders
            FOR EACH ROW EXECUTE FUNCTION orders_audit();
        INSERT INTO orders (customer, total, created)
            SELECT ' customer ' || g || ' ', g / 7.0, timestamptz '2024-01-01' + g * interval '1h'
            FROM generate_series(1, 1042) g;
    """)
    before = pg_dump(db)
    assert check.next_value(db, "orders_id_seq") == 1043
    backup = cli.capture(db.uri("tables=public.orders"))
    db.sql("TRUNCATE orders RESTART IDENTITY")
    assert check.next_value(db, "orders_id_seq") == 1
    cli.restore(backup)
    score = check.full_fidelity(cli, backup)
    # Physical row identity is recorded but server-assigned: reported, not restorable.
    server_paths = {d["path"] for d in score["differences"] if d["fidelity"] == "server"}
    assert {"ctid", "xmin"} & server_paths
    assert score["server"] < 1.0
    check.same_dump(pg_dump(db), before)
    assert db.sql("SELECT last_value, is_called FROM orders_id_seq").strip() == "1042|t"
    got = db.sql("INSERT INTO orders (customer, total) VALUES ('x', 1) RETURNING id").split()[0]
    assert got == "1043"


def test_bad_delete_rows_come_back_from_a_row_scope(check: Any, db: Any, cli: Any, pg_dump: Any) -> None:
    """S-bad-delete: a DELETE whose regexp WHERE matched all 24k rows is undone from a
    before-image of exactly those rows."""
    db.sql("""
        CREATE TABLE posts (id int PRIMARY KEY, title text NOT NULL, body text,
                            tags text[], score real);
        INSERT INTO posts SELECT g, 'post number ' || g, repeat('x', g % 50),
            ARRAY['t' || (g % 7)], g / 3.0 FROM generate_series(1, 24000) g;
    """)
    before = pg_dump(db)
    predicate = r"(regexp_match(title, '^\[(\d+)\]'))[1] IS NULL"
    backup = cli.capture(db.uri(f"table=public.posts&where={quote(predicate)}"))
    db.sql(f"DELETE FROM posts WHERE {predicate}")
    assert db.sql("SELECT count(*) FROM posts").strip() == "0"
    db.sql("INSERT INTO posts (id, title) VALUES (24001, '[7] written after the delete')")
    report = cli.restore(backup)["reports"][0]
    assert "24000 rows put back" in report["items"][0]["action"]
    check.full_fidelity(cli, backup)
    # Row scope never removes rows it did not capture.
    assert db.sql("SELECT title FROM posts WHERE id = 24001").strip() == \
        "[7] written after the delete"
    db.sql("DELETE FROM posts WHERE id = 24001")
    check.same_dump(pg_dump(db), before)


def test_update_without_where_is_reverted_row_by_row(check: Any, db: Any, cli: Any, pg_dump: Any) -> None:
    """S-update-no-where: every before-image comes back; rows the capture did not cover stay."""
    db.sql("""
        CREATE TABLE customers (id int GENERATED BY DEFAULT AS IDENTITY PRIMARY KEY,
            first_name text, last_name text, email text UNIQUE, updated timestamptz);
        CREATE FUNCTION touch() RETURNS trigger LANGUAGE plpgsql AS
            $$ BEGIN NEW.updated := now(); RETURN NEW; END $$;
        CREATE TRIGGER customers_touch BEFORE UPDATE ON customers
            FOR EACH ROW EXECUTE FUNCTION touch();
        INSERT INTO customers (first_name, last_name, email, updated)
            SELECT 'first' || g, CASE WHEN g % 10 = 0 THEN NULL ELSE 'last' || g END,
                   'c' || g || '@example.org', timestamptz '2023-05-01' + g * interval '1 day'
            FROM generate_series(1, 500) g;
    """)
    before = pg_dump(db)
    predicate = "last_name IS DISTINCT FROM 'Role'"
    backup = cli.capture(db.uri(f"table=customers&where={quote(predicate)}"))
    db.sql("UPDATE customers SET last_name = 'Role'")
    cli.restore(backup)
    check.full_fidelity(cli, backup)
    # The trigger did not stamp the reverted rows with a new time.
    check.same_dump(pg_dump(db), before)


def test_force_reset_brings_back_function_enum_and_rows(check: Any, db: Any, cli: Any, pg_dump: Any) -> None:
    """S-force-reset: a schema reset dropped a hand-written function and an enum the ORM does
    not know; restoring the schema brings them, the tables and the rows back."""
    db.sql("""
        CREATE TYPE ticket_state AS ENUM ('open', 'waiting', 'closed');
        CREATE DOMAIN email AS text CHECK (VALUE LIKE '%@%');
        CREATE TABLE users (id serial PRIMARY KEY, email email NOT NULL UNIQUE);
        CREATE TABLE tickets (id serial PRIMARY KEY, user_id int REFERENCES users(id),
                              state ticket_state NOT NULL DEFAULT 'open', title text);
        CREATE FUNCTION open_tickets(uid int) RETURNS bigint LANGUAGE sql STABLE AS
            $$ SELECT count(*) FROM public.tickets WHERE user_id = uid AND state = 'open' $$;
        COMMENT ON FUNCTION open_tickets(int) IS 'hand-written report helper';
        CREATE MATERIALIZED VIEW ticket_counts AS
            SELECT state, count(*) AS n FROM tickets GROUP BY state;
        INSERT INTO users (email) SELECT 'u' || g || '@example.org' FROM generate_series(1, 40) g;
        INSERT INTO tickets (user_id, state, title)
            SELECT 1 + g % 40, (ARRAY['open','waiting','closed'])[1 + g % 3]::ticket_state,
                   'ticket ' || g FROM generate_series(1, 300) g;
        REFRESH MATERIALIZED VIEW ticket_counts;
    """)
    before = pg_dump(db)
    backup = cli.capture(db.uri("schema=public"))
    # What a `migrate reset --force` does: drop everything, re-create the ORM's own tables.
    db.sql("""
        DROP SCHEMA public CASCADE; CREATE SCHEMA public;
        CREATE TABLE users (id serial PRIMARY KEY, email text NOT NULL UNIQUE);
        CREATE TABLE tickets (id serial PRIMARY KEY, user_id int REFERENCES users(id),
                              state text, title text);
    """)
    cli.restore(backup)
    check.full_fidelity(cli, backup)
    check.same_dump(pg_dump(db), before)
    assert db.sql("SELECT public.open_tickets(1)").strip() != ""
    assert db.sql("SELECT enum_range(NULL::public.ticket_state)").strip() == "{open,waiting,closed}"


def test_drop_database_is_undone(check: Any, db: Any, cli: Any, pg_dump: Any, store: Any) -> None:
    """S-drop-database: DROP DATABASE is undone — database, schemas, every kind of object,
    grants and comments — and pg_dump -C of original and restored match."""
    db.server.psql("DO $$ BEGIN IF NOT EXISTS (SELECT FROM pg_roles WHERE rolname = 'gis_reader') "
                   "THEN CREATE ROLE gis_reader; END IF; END $$")
    db.sql(f"""
        COMMENT ON DATABASE {db.name} IS 'old GIS data';
        ALTER DATABASE {db.name} SET work_mem = '8MB';
        CREATE SCHEMA gis AUTHORIZATION postgres;
        COMMENT ON SCHEMA gis IS 'spatial things';
        GRANT USAGE ON SCHEMA gis TO gis_reader;
        CREATE TYPE gis.point2 AS (x double precision, y double precision);
        CREATE TABLE gis.regions (id int GENERATED ALWAYS AS IDENTITY (START WITH 100
            INCREMENT BY 5) PRIMARY KEY, name text NOT NULL, centre gis.point2,
            valid tstzrange, EXCLUDE USING gist (valid WITH &&));
        CREATE TABLE gis.readings (region_id int NOT NULL REFERENCES gis.regions(id),
            taken date NOT NULL, value double precision) PARTITION BY RANGE (taken);
        CREATE TABLE gis.readings_2023 PARTITION OF gis.readings
            FOR VALUES FROM ('2023-01-01') TO ('2024-01-01');
        CREATE TABLE gis.readings_2024 PARTITION OF gis.readings
            FOR VALUES FROM ('2024-01-01') TO ('2025-01-01');
        CREATE INDEX readings_taken ON gis.readings (taken);
        CREATE TABLE gis.layers (id serial PRIMARY KEY, name text);
        CREATE TABLE gis.raster_layers (resolution int) INHERITS (gis.layers);
        CREATE SEQUENCE gis.tile_seq INCREMENT BY 7 MINVALUE 3 MAXVALUE 100000 START 3 CYCLE;
        SELECT nextval('gis.tile_seq'), nextval('gis.tile_seq');
        ALTER TABLE gis.regions ENABLE ROW LEVEL SECURITY;
        CREATE POLICY regions_read ON gis.regions FOR SELECT TO gis_reader USING (id < 1000);
        GRANT SELECT ON gis.regions, gis.readings TO gis_reader;
        CREATE VIEW gis.region_names WITH (security_barrier) AS SELECT id, name FROM gis.regions;
        INSERT INTO gis.regions (name, centre, valid) SELECT 'region ' || g, ROW(g::float8, -g::float8)::gis.point2,
            tstzrange(timestamptz '2020-01-01' + g * interval '1 day',
                      timestamptz '2020-01-01' + (g + 1) * interval '1 day')
            FROM generate_series(1, 50) g;
        INSERT INTO gis.readings SELECT 100 + 5 * (g % 50), date '2023-01-01' + g, g * 0.5
            FROM generate_series(0, 700) g;
        INSERT INTO gis.layers (name) VALUES ('base'), ('roads');
        INSERT INTO gis.raster_layers (name, resolution) VALUES ('dem', 30);
        CREATE TABLE public.meta (k text PRIMARY KEY, v text);
        INSERT INTO public.meta VALUES ('version', '3');
    """)
    before = pg_dump(db, "--create")
    backup = cli.capture(db.uri())
    db.server.psql(f"DROP DATABASE {db.name}")
    damaged, _ = preimage.score(backup, store=store)
    assert damaged.classes["content"].score == 0.0
    result = cli.restore(backup)
    assert result["reports"][0]["notes"]
    check.full_fidelity(cli, backup)
    check.same_dump(pg_dump(db, "--create"), before)
    assert check.next_value(db, "gis.regions_id_seq") == 350
    assert check.next_value(db, "gis.tile_seq") == 17


def test_restore_of_the_undo_backup_drops_the_database_again(db: Any, store: Any) -> None:
    """The undo backup of a restore that re-created a dropped database drops it again."""
    db.sql("CREATE TABLE t (id int PRIMARY KEY); INSERT INTO t VALUES (1);")
    backup = preimage.capture([db.uri()], store=store)
    db.server.psql(f"DROP DATABASE {db.name}")
    undo = preimage.restore(backup.id, store=store).undo_backup_id
    assert undo is not None
    assert db.sql("SELECT count(*) FROM t").strip() == "1"
    preimage.restore(undo, store=store)
    exists = db.server.psql(f"SELECT count(*) FROM pg_database WHERE datname = '{db.name}'")
    assert exists.strip() == "0"
