"""The content-only baseline: the user's data copied, the hard metadata not.

What an ordinary export or a plain copy keeps, implemented for real per
kind of state:

* ``file`` — ``cp -r`` into a scratch directory (no ``-p``: modes are masked
  and setuid bits dropped, times are the copy's own) and ``cp -r`` back over
  the live path;
* ``git`` — the work tree, ``.git`` included, copied as files (``cp -r``);
* ``pip`` — ``pip freeze`` and ``pip install -r`` (versions, not the exact set);
* ``imap`` — every message's bytes, APPENDed back without flags, keywords
  or INTERNALDATE (see :class:`preimage.bench.systems.imap.ImapCopier`);
* ``sqlite`` / ``postgresql`` — every row of every table (or of the URI's
  ``tables=``), re-inserted after ``DELETE``; a missing table is re-created
  from its column names, types and primary key only.  Sequence /
  AUTOINCREMENT state, other constraints, defaults, indexes, triggers,
  comments, functions and types are not kept;
* ``k8s`` — the objects' specs without their metadata
  (:class:`preimage.bench.systems.kubernetes.K8sSpecCopier`);
* ``browser``, ``web+isso``, ``web+trac`` — JSON and CSV exports of storage,
  comments and tickets, written back through the apps' own APIs and forms
  (:mod:`preimage.bench.web_copiers`).

A scheme without a copier here raises :class:`NotCoveredError`, and the
report lists the scenario as not covered by this baseline, with the reason.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, ClassVar, Protocol

from preimage.bench.protector import NotCoveredError, Protection, Protector, RunContext
from preimage.interface.errors import UsageError
from preimage.interface.registry import BuiltIn, PluginLoader
from preimage.interface.sizes import tree_bytes
from preimage.interface.target import Target


class Copier(Protocol):
    """Copies one kind of state's content and writes it back."""

    def take(self, target: Target, dest: Path, env: dict[str, str]) -> tuple[Any, int]:
        """Copy the content of ``target``; return a handle and the bytes kept.

        ``env`` is the environment the agent's shell has (``PIP_FIND_LINKS``, …).
        """

    def put_back(self, target: Target, handle: Any, env: dict[str, str]) -> None:
        """Write the copied content back over the live state."""


class FileCopier:
    """``cp -r`` out and ``cp -r`` back."""

    def take(self, target: Target, dest: Path, env: dict[str, str]) -> tuple[Any, int]:
        """``cp -r SRC DEST``; an absent source copies nothing."""
        src = Path(target.path)
        if not os.path.lexists(src):
            return None, 0
        dest.parent.mkdir(parents=True, exist_ok=True)
        subprocess.run(["cp", "-r", str(src), str(dest)], check=True, capture_output=True)
        return dest, tree_bytes(dest)

    def put_back(self, target: Target, handle: Any, env: dict[str, str]) -> None:
        """``cp -rT COPY SRC`` (over whatever is there now)."""
        if handle is None:
            return
        src = Path(target.path)
        src.parent.mkdir(parents=True, exist_ok=True)
        if src.is_symlink() or (src.exists() and src.is_dir() != Path(handle).is_dir()):
            if src.is_dir() and not src.is_symlink():
                shutil.rmtree(src)
            else:
                src.unlink()
        subprocess.run(["cp", "-rT", str(handle), str(src)], check=True, capture_output=True)


@dataclass
class _TableCopy:
    name: str
    schema: str | None
    columns: list[Any]
    rows: list[dict[str, Any]] = field(default_factory=list)


def sqlalchemy_url(target: Target) -> str:
    """A SQLAlchemy URL for a ``sqlite``/``postgresql`` target (password resolved)."""
    from sqlalchemy.engine import URL

    if target.scheme == "sqlite":
        raw = target.path[1:] if target.path.startswith("/") else target.path
        return f"sqlite:///{raw}"
    url = URL.create(
        "postgresql+psycopg", username=target.username, password=target.resolve_password(),
        host=target.host, port=target.port, database=target.path.lstrip("/") or None,
    )
    return url.render_as_string(hide_password=False)


class SqlRowsCopier:
    """Rows out with ``SELECT *``, back with ``DELETE`` + ``INSERT`` — no sequence state."""

    def _tables(self, target: Target, inspector: Any) -> list[tuple[str | None, str]]:
        named = target.param("tables")
        out: list[tuple[str | None, str]] = []
        if named:
            for t in named.split(","):
                schema, _, name = t.rpartition(".")
                out.append((schema or None, name))
            return out
        if target.scheme == "sqlite":
            return [(None, n) for n in inspector.get_table_names()]
        schemas = (target.param("schema") or "").split(",") if target.param("schema") else [
            s for s in inspector.get_schema_names()
            if s != "information_schema" and not s.startswith("pg_")
        ]
        for schema in schemas:
            out.extend((schema, n) for n in inspector.get_table_names(schema=schema))
        return out

    @staticmethod
    def _ensure_database(target: Target) -> None:
        """Create a dropped PostgreSQL database again (empty) so rows can go back."""
        if target.scheme not in ("postgresql", "postgres"):
            return
        import sqlalchemy as sa

        database = target.path.lstrip("/")
        admin = sa.create_engine(
            sqlalchemy_url(target).rsplit("/", 1)[0] + "/postgres", isolation_level="AUTOCOMMIT"
        )
        try:
            with admin.connect() as conn:
                found = conn.execute(
                    sa.text("SELECT 1 FROM pg_database WHERE datname = :d"), {"d": database}
                ).first()
                if found is None:
                    conn.execute(sa.text(f'CREATE DATABASE "{database}"'))
        finally:
            admin.dispose()

    def take(self, target: Target, dest: Path, env: dict[str, str]) -> tuple[Any, int]:
        """Read every row of the target's tables into memory."""
        import sqlalchemy as sa

        engine = sa.create_engine(sqlalchemy_url(target))
        copies: list[_TableCopy] = []
        try:
            with engine.connect() as conn:
                inspector = sa.inspect(conn)
                for schema, name in self._tables(target, inspector):
                    if not inspector.has_table(name, schema=schema):
                        continue
                    # The primary key is kept (it is how rows are told apart), with no
                    # identity or sequence behind it; nothing else of the table is.
                    pk = set(inspector.get_pk_constraint(name, schema=schema)["constrained_columns"])
                    cols = [
                        sa.Column(c["name"], c["type"], primary_key=c["name"] in pk,
                                  autoincrement=False)
                        for c in inspector.get_columns(name, schema=schema)
                    ]
                    table = sa.Table(name, sa.MetaData(), *cols, schema=schema)
                    rows = [dict(r._mapping) for r in conn.execute(sa.select(table))]
                    copies.append(_TableCopy(name, schema, cols, rows))
        finally:
            engine.dispose()
        size = len(json.dumps([[c.name, c.rows] for c in copies], default=str).encode())
        return copies, size

    def put_back(self, target: Target, handle: Any, env: dict[str, str]) -> None:
        """Empty (or create) each table and insert the copied rows."""
        import sqlalchemy as sa

        self._ensure_database(target)
        engine = sa.create_engine(sqlalchemy_url(target))
        try:
            with engine.begin() as conn:
                if conn.dialect.name == "postgresql":
                    # As a data-only import does (pg_restore --disable-triggers): no FK order.
                    conn.execute(sa.text("SET LOCAL session_replication_role = replica"))
                inspector = sa.inspect(conn)
                for copy in handle:
                    if copy.schema and copy.schema not in inspector.get_schema_names():
                        conn.execute(sa.schema.CreateSchema(copy.schema))
                    cols = [
                        sa.Column(c.name, c.type, primary_key=c.primary_key, autoincrement=False)
                        for c in copy.columns
                    ]
                    table = sa.Table(copy.name, sa.MetaData(), *cols, schema=copy.schema)
                    if inspector.has_table(copy.name, schema=copy.schema):
                        conn.execute(table.delete())
                    else:
                        table.create(conn)
                    if copy.rows:
                        conn.execute(table.insert(), copy.rows)
        finally:
            engine.dispose()


class PipFreezeCopier:
    """``pip freeze`` out, ``pip install -r`` back: versions, not the exact set.

    Packages installed after the freeze stay installed; files are whatever
    the re-install writes.
    """

    @staticmethod
    def _python(target: Target) -> str:
        return str(Path(target.path) / "bin" / "python")

    def take(self, target: Target, dest: Path, env: dict[str, str]) -> tuple[Any, int]:
        """``python -m pip freeze`` of the environment."""
        proc = subprocess.run(
            [self._python(target), "-m", "pip", "freeze", "--all", "--exclude", "pip"],
            capture_output=True, text=True, env=env, check=True, timeout=120,
        )
        dest.parent.mkdir(parents=True, exist_ok=True)
        dest.write_text(proc.stdout)
        return dest, len(proc.stdout.encode())

    def put_back(self, target: Target, handle: Any, env: dict[str, str]) -> None:
        """``python -m pip install -r requirements`` (offline, with the agent's find-links)."""
        proc = subprocess.run(
            [self._python(target), "-m", "pip", "install", "-q", "-r", str(handle)],
            capture_output=True, text=True, env=env, timeout=300,
        )
        if proc.returncode != 0:
            raise RuntimeError(proc.stderr.strip()[-400:])


class GitTreeCopier(FileCopier):
    """A repository copied as files (``cp -r`` of the work tree, ``.git`` included)."""


BUILTIN_COPIERS: dict[str, BuiltIn] = {
    "git": BuiltIn("preimage.bench.content_only:GitTreeCopier"),
    "pip": BuiltIn("preimage.bench.content_only:PipFreezeCopier"),
    "file": BuiltIn("preimage.bench.content_only:FileCopier"),
    "sqlite": BuiltIn("preimage.bench.content_only:SqlRowsCopier"),
    "postgresql": BuiltIn("preimage.bench.content_only:SqlRowsCopier"),
    "postgres": BuiltIn("preimage.bench.content_only:SqlRowsCopier"),
    "imap": BuiltIn("preimage.bench.systems.imap:ImapCopier"),
    "k8s": BuiltIn("preimage.bench.systems.kubernetes:K8sSpecCopier"),
    "browser": BuiltIn("preimage.bench.web_copiers:BrowserCopier"),
    "web+isso": BuiltIn("preimage.bench.web_copiers:IssoCopier"),
    "web+trac": BuiltIn("preimage.bench.web_copiers:TracCopier"),
}

#: Content-only copiers by target scheme (entry-point group ``preimage.bench_copiers``).
copiers: PluginLoader[Copier] = PluginLoader(
    "content-only copier", "preimage.bench_copiers", BUILTIN_COPIERS,
    miss=lambda name, known, hint: UsageError(f"no content-only copier for {name}"),
    cache=False,
)


def get_copier(scheme: str) -> Copier | None:
    """The content-only copier for ``scheme`` (loaded on first use), or ``None``."""
    return copiers.get(scheme)

# Why a scheme has no content-only copier (shown in the report).
NOT_COVERED: dict[str, str] = {}


class ContentOnly(Protector):
    """Copy each expected target's content before the call; write it back after."""

    name: ClassVar[str] = "content"
    label: ClassVar[str] = "content-only copy"

    def before(self, ctx: RunContext) -> Protection:
        """Copy the content of every expected target."""
        handles: dict[str, tuple[Copier, Any]] = {}
        total = 0
        for i, uri in enumerate(ctx.expected):
            target = Target.parse(uri)
            copier = get_copier(target.scheme)
            if copier is None:
                reason = NOT_COVERED.get(
                    target.scheme, f"no content-only copier for {target.scheme}:// state yet"
                )
                raise NotCoveredError(reason)
            handle, size = copier.take(target, ctx.scratch / f"copy-{i}", ctx.sandbox.env)
            handles[uri] = (copier, handle)
            total += size
        return Protection(
            backup_id="copy", targets=list(handles), stored_bytes=total, handle=handles
        )

    def covers(self, ctx: RunContext, protection: Protection, uri: str) -> bool:
        """Covered when the target's content was copied."""
        return uri in protection.handle

    def restore(self, ctx: RunContext, protection: Protection) -> list[str]:
        """Write every copy back; a failure is a note, the score shows the rest."""
        notes: list[str] = []
        for uri, (copier, handle) in protection.handle.items():
            try:
                copier.put_back(Target.parse(uri), handle, ctx.sandbox.env)
            except Exception as exc:  # a failed baseline restore is a result, not a crash
                notes.append(f"{uri}: copy back failed: {exc}")
        return notes
