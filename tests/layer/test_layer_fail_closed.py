"""Calls that once passed unprotected are backed up, and the restore undoes all they did.

Each case runs the real command with bash after the layer's backup, restores
the backup and compares the directory with its state before — content,
modes, mtimes of files *and* directories, which paths exist, and which
paths share an inode — with a walk written here, not the file connector.
"""

from __future__ import annotations

import hashlib
import os
import subprocess
from pathlib import Path

import pytest

import preimage
from preimage import Store
from preimage.layer import BackupLayer, LayerConfig, ToolCall

State = dict[str, tuple[int, int, str, int]]


def state(root: Path) -> State:
    """path → (mode, mtime, content digest or link target, hardlink group id)."""
    out: State = {}
    groups: dict[tuple[int, int], int] = {}
    for dirpath, dirnames, filenames in os.walk(root):
        for name in ["."] if dirpath == str(root) else []:
            st = os.lstat(dirpath)
            out[name] = (st.st_mode, st.st_mtime_ns, "", 0)
        for name in sorted(dirnames + filenames):
            p = os.path.join(dirpath, name)
            st = os.lstat(p)
            if os.path.islink(p):
                body = "-> " + os.readlink(p)
            elif os.path.isfile(p):
                body = hashlib.sha256(Path(p).read_bytes()).hexdigest()
            else:
                body = ""
            group = groups.setdefault((st.st_dev, st.st_ino), len(groups)) if st.st_nlink > 1 \
                and not os.path.isdir(p) else 0
            out[os.path.relpath(p, root)] = (st.st_mode, st.st_mtime_ns, body, group)
    return out


def seed(root: Path) -> dict[str, str]:
    """A small project: directories a, b, `my dir`, sub, conf/*.ini, in.txt, two hardlinks."""
    for d in ("a", "b", "my dir", "sub", "conf", "keep"):
        (root / d).mkdir(parents=True)
        (root / d / "f.txt").write_text(f"{d}\n")
    (root / "conf" / "app.ini").write_text("debug=yes\n")
    (root / "conf" / "db.ini").write_text("host=localhost\n")
    (root / "in.txt").write_text("one\ntwo\n")
    (root / "x").write_text("linked\n")
    os.link(root / "x", root / "y")
    stamp = 1_600_000_000_000_000_000
    for dirpath, dirnames, filenames in os.walk(root, topdown=False):
        for name in dirnames + filenames:
            os.utime(os.path.join(dirpath, name), ns=(stamp, stamp))
    os.utime(root, ns=(stamp, stamp))
    return {"HOME": str(root.parent), "PATH": os.environ["PATH"], "PWD": str(root),
            "LC_ALL": "C"}


@pytest.fixture
def project(tmp_path: Path) -> Path:
    """A seeded directory for one command."""
    root = tmp_path / "proj"
    root.mkdir()
    return root


@pytest.mark.parametrize("command", [
    'rm -rf "$PWD"/{a,b}',
    "rm -rf $'my dir'",
    "rm -r ~+/sub",
    "awk '{print > \"out.txt\"}' in.txt",
    "sed -i.bak 's/yes/no/' conf/*.ini",
    "rm conf/app.ini",
    "rm x y",
    "mkdir -p new/deeper/still && touch new/deeper/still/file",
    "cat in.txt | awk '{print $1 > \"keep/\" $1 \".txt\"}'",
    "ssh-keygen -q -N '' -t ed25519 -f conf/deploy_key",
])
def test_command_is_backed_up_and_restore_undoes_every_change(
        command: str, project: Path, store: Store) -> None:
    """The layer captures before the call; after the call, restore gives back the exact tree."""
    env = seed(project)
    before = state(project)
    layer = BackupLayer(store=store, config=LayerConfig(workspace=str(project)), env=env)
    decision = layer.before(ToolCall.shell(command, cwd=str(project), env=env))
    assert decision.protected, decision.to_dict()
    subprocess.run(["bash", "-c", command], cwd=project, env=env, check=True)
    assert state(project) != before
    preimage.restore(decision.backup_id, store=store)  # type: ignore[arg-type]
    assert state(project) == before


@pytest.mark.parametrize(("command", "forced_by"), [
    ("rm -rf $(pwd)/build", "word `$(pwd)/build`"),
    ("frobnicate --all", "program `frobnicate`"),
    ("awk 'BEGIN { system(\"rm -rf x\") }'", "awk `system()`"),
    ("echo hi > \"$(date +%s).log\"", "redirection target `\"$(date +%s).log\"`"),
])
def test_widened_decision_names_what_forced_it(command: str, forced_by: str, project: Path,
                                               store: Store) -> None:
    """An unknown word or program widens to the workspace, and the plan names it."""
    env = seed(project)
    layer = BackupLayer(store=store, config=LayerConfig(workspace=str(project)), env=env)
    plan = layer.plan(ToolCall.shell(command, cwd=str(project), env=env))
    assert plan.targets and plan.targets[0].uri == f"file://{project}"
    assert forced_by in [w for f in plan.findings for w in f.forced_by]
    assert any(forced_by in n for n in plan.notes)


def test_names_that_resolve_to_nothing_still_pass(project: Path, store: Store) -> None:
    """`rm -f` of paths that provably do not exist captures nothing."""
    env = seed(project)
    layer = BackupLayer(store=store, config=LayerConfig(workspace=str(project)), env=env)
    plan = layer.plan(ToolCall.shell('rm -f "$PWD"/{gone1,gone2} nothing.*', cwd=str(project),
                                     env=env))
    assert plan.targets == []


ORDERS = """CREATE TABLE orders (id int PRIMARY KEY, item text);
INSERT INTO orders SELECT g, 'item ' || g FROM generate_series(1, 5) g;
CREATE FUNCTION purge_all() RETURNS int LANGUAGE sql AS
  $$ WITH d AS (DELETE FROM orders RETURNING 1) SELECT count(*)::int FROM d $$;"""
CTE_DELETE = "WITH d AS (DELETE FROM orders RETURNING *) SELECT count(*) FROM d"


def _psql(pg_server: object, db: str, sql: str) -> str:
    return pg_server.psql(sql, db)  # type: ignore[attr-defined, no-any-return]


@pytest.mark.parametrize(("how", "sql"), [
    ("psql -c", CTE_DELETE),
    ("mcp query", CTE_DELETE),
    ("psql -c", "SELECT purge_all()"),
    ("mcp query", "SELECT purge_all()"),
])
def test_sql_that_reads_like_a_select_is_backed_up(how: str, sql: str, pg_server: object,
                                                    pg_db: str, store: Store,
                                                    tmp_path: Path) -> None:
    """A DELETE inside a CTE and an unknown function are captured; restore brings the rows back."""
    from preimage.layer import McpServer

    _psql(pg_server, pg_db, ORDERS)
    uri = pg_server.uri(pg_db)  # type: ignore[attr-defined]
    config = LayerConfig(workspace=str(tmp_path), mcp={"pg": McpServer(kind="postgres", target=uri)})
    layer = BackupLayer(store=store, config=config, env=dict(os.environ))
    if how == "psql -c":
        call = ToolCall.shell(f'psql -d {pg_db} -c "{sql}"', cwd=str(tmp_path), env=dict(os.environ))
    else:
        call = ToolCall.mcp("pg", "query", {"sql": sql})
    decision = layer.before(call)
    assert decision.protected, decision.to_dict()
    _psql(pg_server, pg_db, sql)
    assert _psql(pg_server, pg_db, "SELECT count(*) FROM orders").strip() == "0"
    preimage.restore(decision.backup_id, store=store)  # type: ignore[arg-type]
    assert _psql(pg_server, pg_db, "SELECT count(*) FROM orders").strip() == "5"


def test_truncate_cascade_captures_every_table_that_references(pg_server: object, pg_db: str,
                                                               store: Store,
                                                               tmp_path: Path) -> None:
    """`TRUNCATE parent CASCADE` empties tables whose foreign keys do not cascade; all are held."""
    from preimage.layer import McpServer

    _psql(pg_server, pg_db, """CREATE TABLE parent (id int PRIMARY KEY);
        CREATE TABLE child (id int PRIMARY KEY, p int REFERENCES parent);
        CREATE TABLE grandchild (c int REFERENCES child);
        INSERT INTO parent VALUES (1), (2); INSERT INTO child VALUES (10, 1), (20, 2);
        INSERT INTO grandchild VALUES (10), (20);""")
    uri = pg_server.uri(pg_db)  # type: ignore[attr-defined]
    config = LayerConfig(workspace=str(tmp_path), mcp={"pg": McpServer(kind="postgres", target=uri)})
    layer = BackupLayer(store=store, config=config, env=dict(os.environ))
    decision = layer.before(ToolCall.mcp("pg", "execute_sql", {"sql": "TRUNCATE parent CASCADE"}))
    assert decision.protected, decision.to_dict()
    _psql(pg_server, pg_db, "TRUNCATE parent CASCADE")
    count = "SELECT (SELECT count(*) FROM parent) + (SELECT count(*) FROM child) " \
            "+ (SELECT count(*) FROM grandchild)"
    assert _psql(pg_server, pg_db, count).strip() == "0"
    preimage.restore(decision.backup_id, store=store)  # type: ignore[arg-type]
    assert _psql(pg_server, pg_db, count).strip() == "6"


def test_a_domain_default_that_takes_a_sequence_value_captures_the_database(
        pg_server: object, pg_db: str, store: Store, tmp_path: Path) -> None:
    """An INSERT filling a column from its domain's default (`nextval` of a sequence the table
    does not own) moves that sequence: the whole database is captured, and restored."""
    from preimage.layer import McpServer

    _psql(pg_server, pg_db, """CREATE SEQUENCE free_seq;
        CREATE DOMAIN counted int4 DEFAULT nextval('free_seq');
        CREATE TABLE t (id counted PRIMARY KEY, note text);""")
    uri = pg_server.uri(pg_db)  # type: ignore[attr-defined]
    config = LayerConfig(workspace=str(tmp_path), mcp={"pg": McpServer(kind="postgres", target=uri)})
    layer = BackupLayer(store=store, config=config, env=dict(os.environ))
    sql = "INSERT INTO t (note) VALUES ('a')"
    decision = layer.before(ToolCall.mcp("pg", "execute_sql", {"sql": sql}))
    assert decision.targets == [uri], decision.to_dict()
    assert any("free_seq" in n for n in decision.notes), decision.notes
    _psql(pg_server, pg_db, sql)
    preimage.restore(decision.backup_id, store=store)  # type: ignore[arg-type]
    assert _psql(pg_server, pg_db, "SELECT nextval('free_seq')").strip() == "1"


def test_rows_of_a_table_without_a_primary_key_are_captured_with_the_table(
        pg_server: object, pg_db: str, store: Store, tmp_path: Path) -> None:
    """`UPDATE … WHERE` on a table without a primary key: an updated row cannot be told from a
    new one, so the whole table is captured and comes back without duplicates."""
    from preimage.layer import McpServer

    _psql(pg_server, pg_db, """CREATE TABLE update_test (a int DEFAULT 10, b int, c text);
        INSERT INTO update_test VALUES (10, NULL, 'foo'), (10, NULL, NULL), (5, 1, 'x');""")
    uri = pg_server.uri(pg_db)  # type: ignore[attr-defined]
    config = LayerConfig(workspace=str(tmp_path), mcp={"pg": McpServer(kind="postgres", target=uri)})
    layer = BackupLayer(store=store, config=config, env=dict(os.environ))
    sql = "UPDATE update_test AS t SET b = 10 WHERE t.a = 10"
    decision = layer.before(ToolCall.mcp("pg", "execute_sql", {"sql": sql}))
    assert decision.targets == [f"{uri}?tables=public.update_test"], decision.to_dict()
    rows = "SELECT a, b, c FROM update_test ORDER BY a, b, c"
    want = _psql(pg_server, pg_db, rows)
    _psql(pg_server, pg_db, sql)
    preimage.restore(decision.backup_id, store=store)  # type: ignore[arg-type]
    assert _psql(pg_server, pg_db, rows) == want


@pytest.mark.parametrize("command", ["make all", "npm access get status pkg", "frobnicate"])
def test_code_the_layer_cannot_read_also_holds_the_home_state(command: str, project: Path,
                                                              store: Store) -> None:
    """Builds, package managers and unknown programs keep state in the home (~/.npm, ~/.config):
    the capture holds the home's entries and ~/.config two levels deep beside the workspace."""
    home = project.parent / "home"             # a home that does not hold the store
    (home / ".config").mkdir(parents=True)
    env = seed(project) | {"HOME": str(home)}
    layer = BackupLayer(store=store, config=LayerConfig(workspace=str(project)), env=env)
    uris = [t.uri for t in layer.plan(ToolCall.shell(command, cwd=str(project), env=env)).targets]
    assert f"file://{project}" in uris
    assert f"file://{home}?depth=1" in uris
    assert f"file://{home}/.config?depth=2" in uris


def test_home_state_beside_a_store_kept_in_the_home_is_captured(project: Path,
                                                                 tmp_path: Path) -> None:
    """The store's default place is inside the home (~/.local/share/preimage): the home
    state a program the layer cannot read may change beside it is still captured — the
    directories on the way to the store and everything beside it — and the plan says so."""
    home = tmp_path / "home"
    share = home / ".local" / "share"
    (share / "app").mkdir(parents=True)
    (share / "app.json").write_text('{"v": 1}\n')
    (share / "app" / "inner").write_text("kept\n")
    env = seed(project) | {"HOME": str(home)}
    store = Store(share / "preimage")
    try:
        layer = BackupLayer(store=store, config=LayerConfig(workspace=str(project)), env=env)
        decision = layer.before(ToolCall.shell("frobnicate", cwd=str(project), env=env))
        assert decision.protected, decision.to_dict()
        assert any("holds the backup store" in n for n in decision.notes), decision.notes
        assert f"file://{share}?depth=1&exclude=preimage" in decision.targets, decision.targets
        def beside() -> dict[Path, tuple[int, int, bytes]]:
            return {p: (p.lstat().st_mode, p.lstat().st_mtime_ns,
                        b"" if p.is_dir() else p.read_bytes())
                    for p in [home, *home.rglob("*")] if "preimage" not in p.parts}

        before = beside()
        subprocess.run(["bash", "-c", 'echo \'{"v": 2}\' > ~/.local/share/app.json; '
                        "touch ~/.local/share/new.txt"], env=env, check=True)
        preimage.restore(decision.backup_id, store=store)  # type: ignore[arg-type]
        assert beside() == before
    finally:
        store.close()


def test_top_creates_its_settings_directory_only_when_missing(project: Path, store: Store) -> None:
    """`top` makes ~/.config/procps on its first run: captured while missing, read-only after."""
    env = seed(project)
    layer = BackupLayer(store=store, config=LayerConfig(workspace=str(project)), env=env)
    call = ToolCall.shell("top -b -n 1", cwd=str(project), env=env)
    assert layer.plan(call).targets[0].uri == f"file://{project.parent}/.config"
    subprocess.run(["bash", "-c", call.command], cwd=project, env=env, check=True,
                   capture_output=True)
    assert (project.parent / ".config" / "procps").is_dir()
    assert layer.plan(call).targets == []
