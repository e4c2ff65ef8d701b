"""Planning a restore: compare the captured objects with the live ones, emit ordered steps.

The order (every step in one transaction, so a failure anywhere undoes all):

1. the restoring role's own default privileges switched off (set again in 11:
   as captured, or as they were when outside the target), so the objects this
   restore creates start from the built-in ACL; database settings;
2. drop views in scope when any view or table under them must change;
3. on tables that are kept: drop foreign keys (re-added after the rows) and
   constraints, indexes, triggers and policies that differ from the capture;
4. drop tables created since the capture and tables whose columns changed
   (``DROP TABLE`` without ``CASCADE``: an object outside the target that
   depends on one — a new foreign key, a view — stops the restore);
5. drop sequences, functions, types, extensions and schemas created since;
6. create schemas, extensions, types, functions, aggregates, operators, casts,
   sequences, tables, views, materialized views (empty) and every other
   object in **dependency order** — the order of the captured items, which
   capture sorted from ``pg_depend`` (:mod:`.order`); then the (validated)
   ``CHECK`` constraints of tables this restore creates, so ``COPY`` checks
   each row as it loads instead of a second scan of the table after it —
   as ``pg_dump`` writes them into ``CREATE TABLE``;
7. rows: ``COPY`` into re-created tables in their captured (storage) order; a
   kept table whose rows differ is rewritten in that order (``TRUNCATE`` +
   ``COPY``), or — when another table's foreign key forbids the truncate —
   synced by primary key through a temp table (user triggers disabled
   meanwhile);
8. defaults that call captured functions, constraints and indexes; each
   partition's copies of its parent's keys under their captured names,
   attached to the parent's index; then foreign keys; triggers (and their
   enabled state); policies and RLS flags;
9. sequence ``OWNED BY`` and ``setval(last_value, is_called)``;
10. views that need a constraint; materialized views refreshed (in
    dependency order) and their indexes;
11. rules, statistics, publications, event triggers, and default privileges;
12. owners, comments and grants.

``merge`` keeps steps that only add (missing objects, missing rows);
``refuse`` raises before writing when any step is planned.
"""

from __future__ import annotations

import functools
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from preimage.connectors.postgres import ddl
from preimage.connectors.postgres.ddl import q, qn
from preimage.connectors.postgres.objects import ACL_KINDS
from preimage.snapshot_schemas.postgres import (
    PgColumn,
    PgConstraint,
    PgDatabase,
    PgExtension,
    PgFunction,
    PgIndex,
    PgObject,
    PgOwned,
    PgSchema,
    PgSequence,
    PgTable,
    PgType,
    PgView,
)

Cursor = Any


@dataclass
class Step:
    """One thing the restore does: SQL statements, or a callable for rows."""

    key: str
    action: str
    sql: list[str] = field(default_factory=list)
    run: Callable[[Cursor], str] | None = None
    removes: bool = False   # deletes something created after the capture
    destructive: bool = False  # drops or changes live state (not allowed by merge)
    bracket: bool = False   # undone later in the same restore: no change of its own


@dataclass
class Plan:
    """Ordered steps by phase."""

    phases: dict[str, list[Step]] = field(default_factory=dict)

    def add(self, phase: str, step: Step) -> None:
        self.phases.setdefault(phase, []).append(step)

    def steps(self, order: list[str]) -> list[Step]:
        return [s for p in order for s in self.phases.get(p, [])]


PHASES = [
    "defaults-off", "database", "drop-late", "drop-views", "drop-attached", "drop-tables", "drop-other",
    "create", "checks", "rows", "constraints", "partition-keys", "foreign-keys", "triggers",
    "policies", "sequence-state", "views", "objects-late", "finish",
]


def shape(table: PgTable) -> tuple[Any, ...]:
    """What a table cannot change in place: kind, columns, partitioning, inheritance."""
    cols = tuple((c.name, c.type, c.collation, c.identity, c.generated, c.local)
                 for c in table.columns)
    return (table.relkind, cols, table.partition_of, table.partition_bound,
            table.partition_key, tuple(table.inherits), table.unlogged)


def owner_comment_acl(item: PgOwned, live: PgOwned | None) -> list[str]:
    """Statements that bring owner, comment and grants back (all of them for a new object)."""
    word, name = ddl.object_ref(item)
    out = []
    if item.owner and (live is None or live.owner != item.owner):
        out += ddl.owner_statement(word, name, item.owner)
    if (live is None and item.comment is not None) or (live is not None and (
        live.comment != item.comment
    )):
        out.append(ddl.comment_statement(f"{word} {name}", item.comment))
    if isinstance(item, PgObject) and item.objtype not in ACL_KINDS:
        return out  # rules, casts, operators, … have no grants
    have = live.acl if live is not None else fresh_acl(item.owner)
    out += ddl.acl_statements(word, name, item.acl, have)
    return out


def fresh_acl(owner: str | None) -> list[str]:
    """Stand-in ACL of a just-created object: revoke from owner and PUBLIC, then grant."""
    return [f"={'/'}{owner}", f"{owner}=/{owner}"] if owner else ["=/"]


@dataclass
class ColumnsBack:
    """How a table's columns come back in place (an undo): the ones it lost, added back,
    and the ones whose type or collation changed, altered back."""

    added: list[PgColumn]
    retyped: list[PgColumn]


def columns_back(t: PgTable, have: PgTable, tables: list[PgTable]) -> ColumnsBack | None:
    """How ``t``'s columns come back on ``have`` (the same table, live) without
    re-creating it, or None when it takes more: the columns ``have`` still holds must be
    in the captured order, nothing else about the table reshaped, no table inheriting from
    it, and every column to add or alter a plain one (no identity or generated value on
    either side; a lost one with no sequence or function in its default — those are
    re-created with the table)."""
    def col(c: PgColumn) -> tuple[Any, ...]:
        return (c.name, c.identity, c.generated, c.local)

    rest = shape(t)[:1] + shape(t)[2:]
    if rest != shape(have)[:1] + shape(have)[2:] or t.relkind != "r" or t.partition_of \
            or t.inherits:
        return None
    me = quoted_table(t)
    if any(x.partition_of == me or me in x.inherits for x in tables):
        return None
    live = {c.name: c for c in have.columns}
    if [col(c) for c in have.columns] != [col(c) for c in t.columns if c.name in live]:
        return None
    added = [c for c in t.columns if c.name not in live]
    retyped = [c for c in t.columns if c.name in live
               and (c.type, c.collation) != (live[c.name].type, live[c.name].collation)]
    if any(c.identity or c.generated is not None for c in retyped):
        return None
    if any(c.identity or c.generated is not None or not c.local or c.name in t.late_defaults
           or (c.default is not None and "nextval(" in c.default) for c in added):
        return None
    return ColumnsBack(added, retyped) if added or retyped else None


class Planner:
    """Builds the :class:`Plan` for one snapshot against the live state."""

    def __init__(self, captured: list[Any], live: list[Any], *, whole_schemas: bool,
                 own_defaults: list[PgObject] | None = None, merge: bool = False,
                 columns_in_place: bool = False) -> None:
        self.captured = captured
        # columns_in_place (an undo): a table that lost columns or had their type changed
        # gets them back with ALTER TABLE … ADD COLUMN / ALTER COLUMN … TYPE instead of
        # being re-created, so rows written to it since the capture stay; ``readd`` holds
        # those columns by table key.
        self.columns_in_place = columns_in_place
        self.readd: dict[str, ColumnsBack] = {}
        self.notes: list[tuple[str, str]] = []  # (item key, what the report should say)
        # merge: what exists stays as the agent left it (nothing is dropped, so nothing is
        # made again over it); only what is missing is created.
        self.merge = merge
        self.live = {i.natural_key(): i for i in live}
        # The restoring role's live default privileges: they would reach every object this
        # restore creates, so they are switched off first and set (as captured, or as they
        # were when out of scope) after everything exists.
        self.own_defaults = {o.natural_key(): o for o in own_defaults or []}
        # Schema and database targets own everything in their schemas: objects created
        # since the capture are dropped.  Table targets drop only dependent views.
        self.whole_schemas = whole_schemas
        self.plan = Plan()
        self.views_dropped: set[str] = set()  # live views this restore drops (and makes again)
        self.recreate: set[str] = set()   # table keys created (new or re-created)
        # partitions' copies of their parents' keys, settled once every table is planned
        self.copies: list[tuple[PgTable, PgConstraint | PgIndex, bool]] = []  # and kept?

    def live_of(self, item: Any) -> Any:
        return self.live.get(item.natural_key())

    # ------------------------------------------------------------ entry
    def build(self, *, data_step: Callable[[PgTable, PgTable | None], Step | None]) -> Plan:
        captured_keys = {i.natural_key() for i in self.captured}
        tables = [t for t in self.captured if isinstance(t, PgTable) and t.exists]
        # Tables: create, re-create or keep.
        for t in tables:
            have = self.live_of(t)
            if have is None or not have.exists or (shape(have) != shape(t) and not self.merge):
                back = (columns_back(t, have, tables) if self.columns_in_place
                        and have is not None and have.exists else None)
                if back is not None:
                    self.readd[t.natural_key()] = back
                    continue
                self.recreate.add(t.natural_key())
        # A child of a re-created parent is dropped with it: re-create it too.
        changed = True
        while changed:
            changed = False
            for t in tables:
                k = t.natural_key()
                if k in self.recreate:
                    continue
                parents = [t.partition_of] if t.partition_of else list(t.inherits)
                for p in parents:
                    if any(x.natural_key() in self.recreate and quoted_table(x) == p for x in tables):
                        self.recreate.add(k)
                        changed = True
        drop_tables = [
            self.live[t.natural_key()] for t in tables
            if t.natural_key() in self.recreate and self.live.get(t.natural_key()) is not None
            and self.live[t.natural_key()].exists
        ]
        extras = [i for k, i in self.live.items()
                  if k not in captured_keys and getattr(i, "exists", True)
                  and (self.whole_schemas or isinstance(i, PgView | PgObject))]
        drop_tables += [i for i in extras if isinstance(i, PgTable)]
        drop_tables += [
            self.live[t.natural_key()] for t in self.captured
            if isinstance(t, PgTable) and not t.exists
            and t.natural_key() in self.live and self.live[t.natural_key()].exists
        ]
        # Sequences owned by a dropped table go with it: treat them as missing.
        dropped = {quoted_table(t) for t in drop_tables}
        for k, item in list(self.live.items()):
            if isinstance(item, PgSequence) and item.owned_by and (
                item.owned_by.rsplit(".", 1)[0] in dropped
            ):
                del self.live[k]
        extras = [i for i in extras if i.natural_key() in self.live]
        self._database()
        self._views(drop_tables, extras)
        kept = [t for t in tables if t.natural_key() not in self.recreate]
        # A table whose columns are put back in place gets its rows by key (the undo's row
        # steps), never synced whole: that would remove the rows written since.
        data_steps = [(t, data_step(t, self.live_of(t) if t in kept else None)) for t in tables
                      if not (self.merge and t in kept and shape(self.live_of(t)) != shape(t))
                      and t.natural_key() not in self.readd]
        any_data_change = any(s is not None for t, s in data_steps if t in kept)
        synced = {t.natural_key() for t, s in data_steps if s is not None}
        for t in kept:
            self._kept_table(t, self._with_readded(t, self.live_of(t)),
                             drop_all_fks=any_data_change, synced=t.natural_key() in synced)
        if drop_tables:
            names = ", ".join(qn(t.namespace, t.name) for t in drop_tables)
            for t in drop_tables:
                gone = t.natural_key() not in captured_keys or not self._captured_exists(t)
                self.plan.add("drop-tables", Step(
                    t.natural_key(), "drop table (created after the capture)" if gone
                    else "drop table to re-create it (its columns changed)",
                    removes=gone, destructive=True,
                ))
            self.plan.phases["drop-tables"][0].sql = [f"DROP TABLE {names}"]
        self._others(extras)
        for t in tables:
            if t.natural_key() in self.recreate:
                self._new_table(t)
        for _table, step in data_steps:
            if step is not None:
                self.plan.add("rows", step)
        for item in self.captured:
            if isinstance(item, PgSequence):
                self._sequence_state(item)
            elif isinstance(item, PgView):
                self._view(item)
            elif isinstance(item, PgObject):
                self._object(item)
        self._partition_keys()
        self._hold_back_defaults(captured_keys)
        # Creation follows the captured order: capture sorted it by dependencies.
        order = {i.natural_key(): n for n, i in enumerate(self.captured)}
        for phase in ("create", "views", "objects-late"):
            if phase in self.plan.phases:
                self.plan.phases[phase].sort(key=lambda s: order.get(s.key, -1))
        return self.plan

    def _captured_exists(self, live_table: PgTable) -> bool:
        for t in self.captured:
            if isinstance(t, PgTable) and t.natural_key() == live_table.natural_key():
                return t.exists
        return False

    # ------------------------------------------------------------ database
    def _database(self) -> None:
        for item in self.captured:
            if not isinstance(item, PgDatabase):
                continue
            have = self.live_of(item)
            name = q(item.name)
            sql = []
            if have is None or have.owner != item.owner:
                sql.append(f"ALTER DATABASE {name} OWNER TO {q(item.owner)}")
            if have is None or have.connection_limit != item.connection_limit:
                sql.append(f"ALTER DATABASE {name} CONNECTION LIMIT {item.connection_limit}")
            if have is None or have.comment != item.comment:
                sql.append(ddl.comment_statement(f"DATABASE {name}", item.comment))
            if have is None or have.settings != item.settings:
                sql.append(f"ALTER DATABASE {name} RESET ALL")
                for setting in item.settings:
                    var, _, value = setting.partition("=")
                    sql.append(f"ALTER DATABASE {name} SET {q(var)} = "
                               f"{ddl.setting_value(var, value)}")
            live_roles = have.role_settings if have else {}
            if live_roles != item.role_settings:
                for role in sorted(live_roles):
                    sql.append(f"ALTER ROLE {q(role)} IN DATABASE {name} RESET ALL")
                for role, settings in sorted(item.role_settings.items()):
                    for setting in settings:
                        var, _, value = setting.partition("=")
                        sql.append(f"ALTER ROLE {q(role)} IN DATABASE {name} SET {q(var)} = "
                                   f"{ddl.setting_value(var, value)}")
            sql += ddl.acl_statements("DATABASE", name, item.acl, have.acl if have else [])
            if sql:
                self.plan.add("database", Step(item.natural_key(), "database settings", sql))

    # ------------------------------------------------------------ views
    def _views(self, drop_tables: list[PgTable], extras: list[Any]) -> None:
        """Drop the live views that must go: every one when a table is dropped; else those
        created since the capture, those defined differently, and every view over them.
        A view made again from its printed definition can print differently (the server
        folds ``BETWEEN``'s parentheses), so views that need not change are left alone."""
        views = [v for v in self.captured if isinstance(v, PgView)]
        live_views = [v for v in self.live.values() if isinstance(v, PgView)]
        if drop_tables:
            drop = {v.natural_key() for v in live_views}
        else:
            drop = {x.natural_key() for x in extras if isinstance(x, PgView)}
            drop |= {v.natural_key() for v in views if self.live_of(v) is not None
                     and _view_sig(self.live_of(v)) != _view_sig(v)}
            grew = True
            while grew:  # and the views over those
                more = {v.natural_key() for v in live_views if drop & set(v.depends)}
                grew = not more <= drop
                drop |= more
        self.views_dropped = drop
        captured_views = {x.natural_key() for x in views}
        for v in sorted(live_views, key=lambda x: -(x.oid or 0)):
            if v.natural_key() not in drop:
                continue
            word, name = ddl.object_ref(v)
            gone = v.natural_key() not in captured_views
            self.plan.add("drop-views", Step(
                v.natural_key(), "drop view (created after the capture)" if gone
                else "drop view to re-create it after the tables",
                [f"DROP {word} IF EXISTS {name}"], removes=gone, destructive=True,
            ))

    def _view(self, v: PgView) -> None:
        have = self.live_of(v)
        if v.natural_key() not in self.views_dropped and have is not None:
            sql = ddl.view_default_statements(v, have.column_defaults) + owner_comment_acl(v, have)
            sql += column_comment_statements(qn(v.namespace, v.name), v.column_comments,
                                             have.column_comments)
            sql += index_settings(qn(v.namespace, v.name), v.namespace, v.indexes, [],
                                  have.indexes, [])
            if sql:
                self.plan.add("finish", Step(v.natural_key(), "owner, comment, grants", sql))
            return
        # Materialized views are created empty with the other objects and filled after the
        # rows and constraints (as pg_dump does); a view needing a constraint waits for it.
        late = [idx.definition for idx in v.indexes]
        late += [ddl.comment_statement(f"INDEX {qn(v.namespace, idx.name)}", idx.comment)
                 for idx in v.indexes if idx.comment is not None]
        late += index_settings(qn(v.namespace, v.name), v.namespace, v.indexes, [], [], [])
        if v.materialized and v.populated:
            late.append(f"REFRESH MATERIALIZED VIEW {qn(v.namespace, v.name)}")
        sql = [ddl.create_view(v, with_data=False), *ddl.view_default_statements(v, {}),
               *owner_comment_acl(v, None),
               *column_comment_statements(qn(v.namespace, v.name), v.column_comments, {})]
        if v.late:
            self.plan.add("views", Step(v.natural_key(), "create view", sql + late))
            return
        self.plan.add("create", Step(v.natural_key(), "create view", sql))
        if late:
            self.plan.add("views", Step(v.natural_key(), "indexes and data", late))

    def _hold_back_defaults(self, captured_keys: set[str]) -> None:
        """Switch the restoring role's default privileges off before anything is created and
        back on after: objects the restore creates start from the built-in ACL, which the
        grants of each object then turn into the captured one.  Default privileges the
        target holds are put back as captured (:meth:`_object`); others as they were."""
        creates = any(self.plan.phases.get(p) for p in ("create", "views", "objects-late"))
        if not creates:
            return
        for key, live in self.own_defaults.items():
            already = any(s.key == key for p in ("drop-late", "defaults-off")
                          for s in self.plan.phases.get(p, []))
            if not already:
                self.plan.add("defaults-off", Step(
                    key, "default privileges held back while objects are created",
                    _statements(live.drop), bracket=True))
            if key in captured_keys:
                if not any(s.key == key for s in self.plan.phases.get("objects-late", [])):
                    self.plan.add("objects-late", Step(
                        key, "default privileges set again", list(live.definition),
                        bracket=True))
            elif not already:  # outside the target: back as they were
                self.plan.add("objects-late", Step(
                    key, "default privileges put back", list(live.definition), bracket=True))

    def _object(self, o: PgObject) -> None:
        """Create an object that is missing or defined differently (dropped first)."""
        have = self.live_of(o)
        gone = set(self.recreate)
        gone |= self.views_dropped
        if have is not None and gone & set(o.depends):
            have = None  # dropped with the table or view it belongs to
        if have is not None and have.definition == o.definition:
            sql = owner_comment_acl(o, have) if o.ref else []
            if sql:
                self.plan.add("finish", Step(o.natural_key(), "owner/comment/acl", sql))
            return
        if have is not None:
            phase = "defaults-off" if o.objtype == "default acl" else (
                "drop-late" if o.late else "drop-other")
            self.plan.add(phase, Step(
                o.natural_key(), f"drop {o.objtype} to re-create it", _statements(have.drop),
                destructive=True))
        sql = list(o.definition) + (owner_comment_acl(o, None) if o.ref else [])
        self.plan.add("objects-late" if o.late else "create",
                      Step(o.natural_key(), f"create {o.objtype}", sql))

    # ------------------------------------------------------------ tables
    def _new_table(self, t: PgTable) -> None:
        seqs = {s.owned_by.rsplit(".", 1)[-1].strip('"'): s for s in self.captured
                if isinstance(s, PgSequence) and s.identity and s.owned_by
                and s.owned_by.startswith(quoted_table(t) + ".")}
        name = qn(t.namespace, t.name)
        parents = [t.partition_of] if t.partition_of else list(t.inherits)
        parent = next((x for x in self.captured if isinstance(x, PgTable) and parents
                       and quoted_table(x) == parents[0]), None)
        sql = [ddl.create_table(t, seqs), *ddl.inherited_column_statements(t),
               *ddl.column_settings(t, None, {c.name: c for c in parent.columns}
                                    if parent else None)]
        if t.replica_identity in ("f", "n"):
            sql.append(f"ALTER TABLE {name} REPLICA IDENTITY "
                       f"{'FULL' if t.replica_identity == 'f' else 'NOTHING'}")
        self.plan.add("create", Step(t.natural_key(), "create table", sql))
        defaults = [f"ALTER TABLE {name} ALTER COLUMN {q(c.name)} SET DEFAULT {c.default}"
                    for c in t.columns if c.name in t.late_defaults and c.default is not None]
        if defaults:
            self.plan.add("constraints", Step(t.natural_key(), "defaults calling functions",
                                              defaults))
        self._attached(t, None)

    def _with_readded(self, t: PgTable, have: PgTable) -> PgTable:
        """``have`` as it will be once its columns are back in place: a lost one as
        ``ADD COLUMN`` makes it (type, collation and default; nullable, no comment, grant
        or settings), an altered one with the captured type and collation and no default
        (it is dropped before the type changes), so the steps that follow set the rest as
        for any kept column."""
        back = self.readd.get(t.natural_key())
        if back is None:
            return have
        retyped = {c.name: c for c in back.retyped}
        cols = [c.model_copy(update={"type": retyped[c.name].type, "default": None,
                                     "collation": retyped[c.name].collation})
                if c.name in retyped else c for c in have.columns]
        made = [PgColumn(name=c.name, type=c.type, collation=c.collation, default=c.default,
                         not_null=c.not_null) for c in back.added]
        return have.model_copy(update={"columns": [*cols, *made]})

    def _columns_back(self, t: PgTable, have: PgTable) -> None:
        """The statements that put a table's columns back in place: ``ALTER COLUMN … TYPE``
        (``USING`` a cast of the value, its default dropped first) for a changed column,
        ``ADD COLUMN`` for a lost one (filled with its default, as a row inserted since
        would have been); ``SET NOT NULL`` of an added column after the rows are written
        back; a note when added columns now come after ones they preceded."""
        back = self.readd.get(t.natural_key())
        if back is None:
            return
        name = qn(t.namespace, t.name)
        live = {c.name: c for c in have.columns}
        sql = []
        for col in back.retyped:
            alter = f"ALTER TABLE {name} ALTER COLUMN {q(col.name)}"
            if live[col.name].default is not None:
                sql.append(f"{alter} DROP DEFAULT")
            collate = f" COLLATE {col.collation}" if col.collation else ""
            sql.append(f"{alter} TYPE {col.type}{collate} USING {q(col.name)}::{col.type}")
        for col in back.added:
            d = f"ALTER TABLE {name} ADD COLUMN {q(col.name)} {col.type}"
            if col.collation:
                d += f" COLLATE {col.collation}"
            if col.default is not None:
                d += f" DEFAULT {col.default}"
            sql.append(d)
        what = [f"type of {', '.join(c.name for c in back.retyped)}"] if back.retyped else []
        if back.added:
            what.append(f"column(s) {', '.join(c.name for c in back.added)}")
        self.plan.add("create", Step(t.natural_key(), f"put back {' and '.join(what)} in place",
                                     sql, destructive=False))
        not_null = [f"ALTER TABLE {name} ALTER COLUMN {q(c.name)} SET NOT NULL"
                    for c in back.added if c.not_null]
        if not_null:
            self.plan.add("constraints", Step(t.natural_key(), "NOT NULL of the added columns",
                                              not_null))
        names = [c.name for c in back.added]
        if names and [c.name for c in t.columns][-len(names):] != names:
            self.notes.append((t.natural_key(),
                f"{t.qualified}: column(s) {', '.join(names)} are back with their values but "
                "now come last (a column cannot be added in the middle); a restore of the "
                "backup re-creates the table in its captured column order"))

    def _kept_table(
        self, t: PgTable, have: PgTable, *, drop_all_fks: bool, synced: bool
    ) -> None:
        name = qn(t.namespace, t.name)
        key = t.natural_key()
        self._columns_back(t, self.live_of(t))
        have_cons = {c.name: c for c in have.constraints}
        have_idx = {i.name: i for i in have.indexes}
        have_trg = {x.name: x for x in have.triggers}
        have_pol = {p.name: p for p in have.policies}
        if self.merge:  # only what is missing is made; nothing that exists is dropped
            self._attached(t, have, have_cons=have_cons, have_idx=have_idx, have_trg=have_trg,
                           have_pol=have_pol, synced=synced)
            return
        drops = []
        for con in have.constraints:
            want_con = next((c for c in t.constraints if c.name == con.name), None)
            if (con.type == "f" and drop_all_fks) or want_con is None or (
                want_con.definition != con.definition
            ):
                drops.append(f"ALTER TABLE {name} DROP CONSTRAINT {q(con.name)}")
                have_cons.pop(con.name)
        for idx in _differing(have.indexes, t.indexes, lambda i: (i.definition, i.attached_to)):
            have_idx.pop(idx.name)
            # a copy of the parent's index cannot be dropped alone: it goes with the
            # parent's, or is renamed to the captured name (_partition_keys)
            if idx.attached_to is None:
                drops.append(f"DROP INDEX {qn(t.namespace, idx.name)}")
        for trg in _differing(have.triggers, t.triggers, lambda x: x.definition):
            drops.append(f"DROP TRIGGER {q(trg.name)} ON {name}")
            have_trg.pop(trg.name)
        for pol in _differing(have.policies, t.policies, lambda p: p.definition):
            drops.append(f"DROP POLICY {q(pol.name)} ON {name}")
            have_pol.pop(pol.name)
        if drops:
            self.plan.add("drop-attached", Step(
                key, "drop constraints/indexes/triggers/policies that differ", drops,
                destructive=True))
        cols: list[str] = []
        live_cols = {col.name: col for col in have.columns}
        for col in t.columns:
            lc = live_cols[col.name]
            if col.identity or col.generated is not None:
                continue
            if lc.default != col.default:
                cols.append(f"ALTER TABLE {name} ALTER COLUMN {q(col.name)} " + (
                    f"SET DEFAULT {col.default}" if col.default is not None else "DROP DEFAULT"))
            if lc.not_null != col.not_null and col.name not in t.row_key:
                cols.append(f"ALTER TABLE {name} ALTER COLUMN {q(col.name)} "
                            f"{'SET' if col.not_null else 'DROP'} NOT NULL")
        if have.options != t.options:
            if have.options:
                opts = ", ".join(o.split("=", 1)[0] for o in have.options)
                cols.append(f"ALTER TABLE {name} RESET ({opts})")
            if t.options:
                cols.append(f"ALTER TABLE {name} SET ({', '.join(t.options)})")
        if t.access_method != have.access_method:
            cols.append(f"ALTER TABLE {name} SET ACCESS METHOD {q(t.access_method or 'heap')}")
        cols += ddl.column_settings(t, live_cols)
        if t.replica_identity not in ("i", have.replica_identity):
            word = {"d": "DEFAULT", "f": "FULL", "n": "NOTHING"}[t.replica_identity]
            cols.append(f"ALTER TABLE {name} REPLICA IDENTITY {word}")
        if cols:
            self.plan.add("create", Step(key, "column defaults, NOT NULL, options", cols,
                                         destructive=True))
        self._attached(t, have, have_cons=have_cons, have_idx=have_idx, have_trg=have_trg,
                       have_pol=have_pol, synced=synced)

    def _attached(
        self, t: PgTable, have: PgTable | None, *, have_cons: dict[str, Any] | None = None,
        have_idx: dict[str, Any] | None = None, have_trg: dict[str, Any] | None = None,
        have_pol: dict[str, Any] | None = None, synced: bool = False,
    ) -> None:
        """Constraints, indexes, triggers, policies, RLS, comments, owner and grants."""
        name = qn(t.namespace, t.name)
        key = t.natural_key()
        have_cons = have_cons or {}
        have_idx = have_idx or {}
        have_trg = have_trg or {}
        have_pol = have_pol or {}
        checks: list[str] = []
        cons: list[str] = []
        fks: list[str] = []
        trg: list[str] = []
        pol: list[str] = []
        fin: list[str] = []
        for c in t.constraints:
            live_index_comment = have_cons[c.name].index_comment if c.name in have_cons else None
            if c.type in ("p", "u", "x") and live_index_comment != c.index_comment:
                fin.append(ddl.comment_statement(f"INDEX {qn(t.namespace, c.name)}",
                                                 c.index_comment))
            if c.name in have_cons:
                if have_cons[c.name].comment != c.comment:
                    fin.append(ddl.comment_statement(f"CONSTRAINT {q(c.name)} ON {name}",
                                                     c.comment))
                continue
            stmt = f"ALTER TABLE {name} ADD CONSTRAINT {q(c.name)} {c.definition}"
            if c.type == "c" and have is None and not c.definition.endswith("NOT VALID"):
                checks.append(stmt)  # a new, empty table: checked row by row by COPY
            else:
                (fks if c.type == "f" else cons).append(stmt)
            if c.comment is not None:
                fin.append(ddl.comment_statement(f"CONSTRAINT {q(c.name)} ON {name}", c.comment))
        for i in t.indexes:
            if i.name in have_idx:
                if have_idx[i.name].comment != i.comment:
                    fin.append(ddl.comment_statement(f"INDEX {qn(t.namespace, i.name)}",
                                                     i.comment))
                continue
            if i.attached_to:  # settled with the partition's copies of its parent's keys
                self.copies.append((t, i, have is not None))
                continue
            cons.append(i.definition)
            if i.comment is not None:
                fin.append(ddl.comment_statement(f"INDEX {qn(t.namespace, i.name)}", i.comment))
        live_keys = {c.name: c for c in (have.inherited_keys or [])} if have else {}
        for k in t.inherited_keys or []:
            got = live_keys.get(k.name)
            if got is not None and (got.definition, got.attached_to) == (k.definition,
                                                                           k.attached_to):
                if got.comment != k.comment:
                    fin.append(ddl.comment_statement(f"CONSTRAINT {q(k.name)} ON {name}",
                                                     k.comment))
                continue
            self.copies.append((t, k, have is not None))
        fin += index_settings(name, t.namespace, t.indexes, t.constraints,
                              list(have_idx.values()), list(have_cons.values()))
        for x in t.triggers:
            live_trg = have_trg.get(x.name)
            if live_trg is None:
                trg.append(x.definition)
            if live_trg is None or live_trg.enabled != x.enabled or synced:
                # A synced table had its user triggers disabled meanwhile: set every state.
                # The partitions' copies keep their own captured states (set below).
                trg.append(ddl.trigger_enable_statement(
                    name, x.name, x.enabled, only=t.inherited_triggers is not None))
            if (live_trg.comment if live_trg else None) != x.comment:
                fin.append(ddl.comment_statement(f"TRIGGER {q(x.name)} ON {name}", x.comment))
        live_inherited = (have.inherited_triggers or {}) if have else {}
        for trigger, state in sorted((t.inherited_triggers or {}).items()):
            # a copy of the parent's trigger exists once the parent's does (triggers phase)
            if live_inherited.get(trigger) != state or synced:
                fin.append(ddl.inherited_trigger_statement(name, trigger, state))
        for p in t.policies:
            if p.name not in have_pol:
                pol.append(p.definition)
            if (have_pol[p.name].comment if p.name in have_pol else None) != p.comment:
                fin.append(ddl.comment_statement(f"POLICY {q(p.name)} ON {name}", p.comment))
        live_rls = (have.rls_enabled, have.rls_forced) if have else (False, False)
        if live_rls[0] != t.rls_enabled:
            pol.append(f"ALTER TABLE {name} "
                       f"{'ENABLE' if t.rls_enabled else 'DISABLE'} ROW LEVEL SECURITY")
        if live_rls[1] != t.rls_forced:
            pol.append(f"ALTER TABLE {name} "
                       f"{'' if t.rls_forced else 'NO '}FORCE ROW LEVEL SECURITY")
        live_cols = {col.name: col for col in have.columns} if have else {}
        for col in t.columns:
            live_comment = live_cols[col.name].comment if col.name in live_cols else None
            if live_comment != col.comment:
                fin.append(ddl.comment_statement(f"COLUMN {name}.{q(col.name)}", col.comment))
        if t.replica_identity == "i":
            idx = next((i.name for i in t.indexes if i.name), None)
            if idx and (have is None or have.replica_identity != "i"):
                fin.append(f"ALTER TABLE {name} REPLICA IDENTITY USING INDEX {q(idx)}")
        fin += owner_comment_acl(t, have)
        fin += ddl.column_acl_statements(t, live_cols if have else None)
        for phase, sql, action in (
            ("checks", checks, "check constraints"),
            ("constraints", cons, "constraints and indexes"),
            ("foreign-keys", fks, "foreign keys"),
            ("triggers", trg, "triggers"),
            ("policies", pol, "row-level security"),
            ("finish", fin, "owner, comments, grants"),
        ):
            if sql:
                self.plan.add(phase, Step(key, action, sql))

    def _partition_keys(self) -> None:
        """A partition's copies of its parent's keys and indexes: named as captured, attached.

        Adding a key or index to a partitioned table (or a partition to it) gives every
        partition a copy under a name PostgreSQL chooses; such a copy is renamed to the
        captured name, or made and attached where there is none (:func:`settle_copy`), once
        the parents' keys and indexes exist.  Only copies missing by name or differing are
        settled (a parent's key made again differs in its copies too)."""
        for t, copy, kept in self.copies:
            what = "key" if isinstance(copy, PgConstraint) else "index"
            self.plan.add("partition-keys", Step(
                t.natural_key(), f"copy of the parent's {what} {copy.name}",
                run=functools.partial(settle_copy, table=t, copy=copy), destructive=kept))

    # ------------------------------------------------------------ other objects
    def _others(self, extras: list[Any]) -> None:
        """Schemas, extensions, types, functions and sequences: create, change, drop."""
        drop: list[Step] = []
        for item in sorted(extras, key=lambda i: -(getattr(i, "oid", 0) or 0)):
            if isinstance(item, PgObject):
                phase = "defaults-off" if item.objtype == "default acl" else (
                    "drop-late" if item.late else "drop-other")
                self.plan.add(phase, Step(
                    item.natural_key(), f"drop {item.objtype} (created after the capture)",
                    _statements(item.drop), removes=True, destructive=True))
            elif isinstance(item, PgFunction | PgType | PgSequence):
                if isinstance(item, PgSequence) and item.identity:
                    continue  # goes with its table
                drop.append(Step(item.natural_key(), "drop (created after the capture)",
                                 [ddl.drop_statement(item)], removes=True, destructive=True))
        for item in extras:
            if isinstance(item, PgExtension):
                drop.append(Step(item.natural_key(), "drop extension (created after the capture)",
                                 [f"DROP EXTENSION {q(item.name)}"], removes=True,
                                 destructive=True))
        for item in extras:
            if isinstance(item, PgSchema):
                drop.append(Step(item.natural_key(), "drop schema (created after the capture)",
                                 [f"DROP SCHEMA {q(item.name)}"], removes=True, destructive=True))
        for item in self.captured:
            have = self.live_of(item)
            if isinstance(item, PgSchema):
                if not item.exists:
                    if have is not None and have.exists:
                        drop.append(Step(item.natural_key(), "drop schema (absent at capture)",
                                         [f"DROP SCHEMA {q(item.name)}"], removes=True,
                                         destructive=True))
                    continue
                sql = []
                if have is None or not have.exists:
                    sql.append(f"CREATE SCHEMA {q(item.name)}")
                    have = None
                if item.owner and (have is None or have.owner != item.owner):
                    sql.append(f"ALTER SCHEMA {q(item.name)} OWNER TO {q(item.owner)}")
                if (have.comment if have else None) != item.comment:
                    sql.append(ddl.comment_statement(f"SCHEMA {q(item.name)}", item.comment))
                sql += ddl.acl_statements("SCHEMA", q(item.name), item.acl,
                                          have.acl if have else fresh_acl(item.owner))
                if sql:
                    self.plan.add("create", Step(item.natural_key(), "schema", sql))
            elif isinstance(item, PgExtension) and have is None:
                sql = [f"CREATE EXTENSION IF NOT EXISTS {q(item.name)} WITH SCHEMA "
                       f"{q(item.namespace)} VERSION {ddl.lit(item.version)}"]
                if item.comment is not None:  # None: an older capture, which did not read it
                    sql.append(ddl.comment_statement(f"EXTENSION {q(item.name)}", item.comment))
                self.plan.add("create", Step(item.natural_key(), "create extension", sql))
            elif (isinstance(item, PgExtension) and item.comment is not None
                  and have.comment != item.comment):
                self.plan.add("finish", Step(item.natural_key(), "extension comment", [
                    ddl.comment_statement(f"EXTENSION {q(item.name)}", item.comment)]))
            elif isinstance(item, PgType):
                if have is not None and item.domain and have.domain and (
                        item.domain.base == have.domain.base):
                    self._alter_domain(item, have)
                    continue
                if have is not None and have.definition == item.definition:
                    sql = owner_comment_acl(item, have) + column_comment_statements(
                        f"{qn(item.namespace, item.name)}", item.attribute_comments,
                        have.attribute_comments)
                    if sql:
                        self.plan.add("finish", Step(item.natural_key(), "owner/comment/acl",
                                                     sql))
                    continue
                if have is not None and item.typtype == "e" and have.typtype == "e":
                    # Enum values cannot be removed: swap in a new type under the columns.
                    self.plan.add("create", Step(
                        item.natural_key(), "re-create enum under its columns",
                        run=functools.partial(replace_enum, item=item),
                        destructive=True))
                    self.plan.add("finish", Step(item.natural_key(), "owner/comment/acl",
                                                 owner_comment_acl(item, None)))
                    continue
                if have is not None:
                    drop.append(Step(item.natural_key(), "drop type to re-create it",
                                     [ddl.drop_statement(have)], destructive=True))
                self.plan.add("create", Step(item.natural_key(), "create type", [
                    item.definition, *owner_comment_acl(item, None),
                    *column_comment_statements(qn(item.namespace, item.name),
                                               item.attribute_comments, {})]))
                late = _not_valid_checks(item)
                if late:  # after the rows, which they check
                    self.plan.add("constraints", Step(item.natural_key(), "domain constraints",
                                                      late))
            elif isinstance(item, PgFunction):
                if item.temporary:
                    continue  # its temporary objects are another session's (uncaptured)
                if have is not None and have.definition == item.definition:
                    sql = owner_comment_acl(item, have)
                    if sql:
                        self.plan.add("finish", Step(item.natural_key(), "owner/comment/acl",
                                                     sql))
                    continue
                self.plan.add("create", Step(
                    item.natural_key(), "create function" if have is None else "replace function",
                    [item.definition, *owner_comment_acl(item, have)],
                    destructive=have is not None))
            elif isinstance(item, PgSequence) and not item.identity:
                if have is None:
                    sql = [ddl.create_sequence(item), *owner_comment_acl(item, None)]
                    self.plan.add("create", Step(item.natural_key(), "create sequence", sql))
                else:
                    sql = []
                    if _seq_settings(have) != _seq_settings(item):
                        sql.append(ddl.alter_sequence(item))
                    sql += owner_comment_acl(item, have)
                    if sql:
                        self.plan.add("create", Step(item.natural_key(), "sequence settings",
                                                        sql, destructive=True))
        for step in drop:
            self.plan.add("drop-other", step)

    def _alter_domain(self, item: PgType, have: PgType) -> None:
        """Change a live domain into the captured one in place (``ALTER DOMAIN``): columns
        use it, so it cannot be dropped.  Constraints it lacks are added after the rows are
        put back (a ``NOT VALID`` one still checks the rows written), as is NOT NULL."""
        want, live = item.domain, have.domain
        assert want is not None and live is not None
        name = qn(item.namespace, item.name)
        early: list[str] = []
        late: list[str] = []
        wanted = {c.name: c for c in want.constraints}
        live_checks = {c.name: c for c in live.constraints}
        for c in live.constraints:
            if c.name not in wanted or wanted[c.name].definition != c.definition:
                early.append(f"ALTER DOMAIN {name} DROP CONSTRAINT {q(c.name)}")
                live_checks.pop(c.name)
        for c in want.constraints:
            if c.name not in live_checks:
                late.append(f"ALTER DOMAIN {name} ADD CONSTRAINT {q(c.name)} {c.definition}")
            if (live_checks[c.name].comment if c.name in live_checks else None) != c.comment:
                late.append(ddl.comment_statement(f"CONSTRAINT {q(c.name)} ON DOMAIN {name}",
                                                  c.comment))
        if live.default != want.default:
            early.append(f"ALTER DOMAIN {name} " + (
                f"SET DEFAULT {want.default}" if want.default is not None else "DROP DEFAULT"))
        if live.not_null and not want.not_null:
            early.append(f"ALTER DOMAIN {name} DROP NOT NULL")
        elif want.not_null and not live.not_null:
            late.append(f"ALTER DOMAIN {name} SET NOT NULL")
        if early:
            self.plan.add("create", Step(item.natural_key(), "alter domain", early,
                                         destructive=True))
        if late:
            self.plan.add("constraints", Step(item.natural_key(), "domain constraints", late,
                                              destructive=True))
        sql = owner_comment_acl(item, have)
        if sql:
            self.plan.add("finish", Step(item.natural_key(), "owner/comment/acl", sql))

    def _sequence_state(self, seq: PgSequence) -> None:
        have = self.live_of(seq)
        table_key = _table_key_of(seq.owned_by)
        recreated = table_key is not None and table_key in self.recreate
        sql = []
        if seq.identity:
            if have is not None and not recreated and _seq_settings(have) != _seq_settings(seq):
                sql.append(ddl.alter_sequence(seq))
            if have is not None and not recreated:
                sql += owner_comment_acl(seq, have)
            elif seq.comment is not None or seq.acl:
                sql += [s for s in owner_comment_acl(seq, None) if " OWNER TO " not in s]
        elif have is None or recreated or have.owned_by != seq.owned_by:
            sql.append(ddl.owned_by_statement(seq))
        if have is None or recreated or (have.last_value, have.is_called) != (
            seq.last_value, seq.is_called
        ):
            sql.append(ddl.setval_statement(seq))
        if sql:
            # Setting a live sequence back changes what the agent left (merge keeps it: the
            # rows the agent added may already use the values past the captured position).
            self.plan.add("sequence-state", Step(seq.natural_key(), "sequence state", sql,
                                                 destructive=have is not None and not recreated))


def column_comment_statements(relation: str, want: dict[str, str],
                              have: dict[str, str]) -> list[str]:
    """``COMMENT ON COLUMN`` for every column (of a view, or attribute of a composite type)
    whose comment differs from the live one; ``IS NULL`` for one the capture did not have."""
    return [ddl.comment_statement(f"COLUMN {relation}.{q(col)}", want.get(col))
            for col in sorted(set(want) | set(have)) if want.get(col) != have.get(col)]


def index_settings(relation: str, namespace: str, indexes: list[PgIndex],
                   keys: list[PgConstraint], live_indexes: list[PgIndex],
                   live_keys: list[PgConstraint]) -> list[str]:
    """The index settings that are not part of an index's definition, set as captured: which
    index (a key's too) the relation is ``CLUSTER``ed on, and per-column statistics targets."""
    sql = []
    ours: list[PgIndex | PgConstraint] = [*indexes, *keys]
    theirs: list[PgIndex | PgConstraint] = [*live_indexes, *live_keys]
    want = next((x.name for x in ours if x.clustered), None)
    have = next((x.name for x in theirs if x.clustered), None)
    if want != have:
        sql.append(f"ALTER TABLE {relation} CLUSTER ON {q(want)}" if want
                   else f"ALTER TABLE {relation} SET WITHOUT CLUSTER")
    live = {i.name: i.statistics for i in live_indexes}
    for i in indexes:
        got = live.get(i.name, {})
        for column in sorted(set(i.statistics) | set(got), key=int):
            target = i.statistics.get(column, -1)
            if got.get(column, -1) != target:
                sql.append(f"ALTER INDEX {qn(namespace, i.name)} ALTER COLUMN {int(column)} "
                           f"SET STATISTICS {target}")
    return sql


def settle_copy(cur: Cursor, table: PgTable, copy: PgConstraint | PgIndex) -> str:
    """Give the partition's copy of its parent's key or index (the one attached to
    ``copy.attached_to``) the captured name; with no copy, make it and attach it."""
    name = qn(table.namespace, table.name)
    cur.execute(
        """SELECT ic.relname FROM pg_index i JOIN pg_class ic ON ic.oid = i.indexrelid
        JOIN pg_inherits h ON h.inhrelid = i.indexrelid
        WHERE i.indrelid = %s::regclass AND h.inhparent = to_regclass(%s)""",
        (name, copy.attached_to))
    row = cur.fetchone()
    if row is not None and row["relname"] != copy.name:
        cur.execute(f"ALTER INDEX {qn(table.namespace, row['relname'])} "
                    f"RENAME TO {q(copy.name)}".encode())
        done = "renamed"
    elif row is None:
        cur.execute((copy.definition if isinstance(copy, PgIndex) else
                     f"ALTER TABLE {name} ADD CONSTRAINT {q(copy.name)} {copy.definition}"
                     ).encode())
        cur.execute("SELECT to_regclass(%s) IS NOT NULL AS there", (copy.attached_to,))
        there = cur.fetchone()["there"]
        if there:
            cur.execute(f"ALTER INDEX {copy.attached_to} ATTACH PARTITION "
                        f"{qn(table.namespace, copy.name)}".encode())
        done = "made and attached" if there else "made (the parent has none to attach to)"
    else:
        done = "in place"
    what = (f"INDEX {qn(table.namespace, copy.name)}" if isinstance(copy, PgIndex)
            else f"CONSTRAINT {q(copy.name)} ON {name}")
    if row is None or copy.comment is not None:
        cur.execute(ddl.comment_statement(what, copy.comment).encode())
    return done


def replace_enum(cur: Cursor, item: PgType) -> str:
    """Put the captured enum in place of the live one: rename the live type, create the
    captured one, move every column over (values it no longer has become NULL — the row
    sync puts the captured values back), drop the old type."""
    name = qn(item.namespace, item.name)
    old = f"{item.name}__preimage_old"
    cur.execute(f"ALTER TYPE {name} RENAME TO {q(old)}".encode())
    cur.execute(item.definition.encode())
    cur.execute(
        """SELECT format('%%I.%%I', n.nspname, c.relname) AS tbl, a.attname,
            pg_get_expr(d.adbin, d.adrelid) AS def
        FROM pg_attribute a JOIN pg_class c ON c.oid = a.attrelid
        JOIN pg_namespace n ON n.oid = c.relnamespace
        LEFT JOIN pg_attrdef d ON d.adrelid = a.attrelid AND d.adnum = a.attnum
        WHERE a.atttypid = to_regtype(%s) AND c.relkind IN ('r', 'p') AND NOT a.attisdropped
          AND NOT c.relispartition AND a.attinhcount = 0""",
        (qn(item.namespace, old),),
    )
    labels = ", ".join(ddl.lit(v) for v in item.labels)
    moved = 0
    for row in cur.fetchall():
        col = q(row["attname"])
        if row["def"] is not None:
            cur.execute(f"ALTER TABLE {row['tbl']} ALTER COLUMN {col} DROP DEFAULT".encode())
        cur.execute(
            f"ALTER TABLE {row['tbl']} ALTER COLUMN {col} TYPE {name} USING (CASE WHEN "
            f"{col}::text = ANY (ARRAY[{labels}]) THEN {col}::text END)::{name}".encode()
        )
        if row["def"] is not None:
            default = row["def"].replace(qn(item.namespace, old), name).replace(
                f"{item.namespace}.{old}", name)
            cur.execute(f"ALTER TABLE {row['tbl']} ALTER COLUMN {col} SET DEFAULT "
                        f"{default}".encode())
        moved += 1
    cur.execute(f"DROP TYPE {qn(item.namespace, old)}".encode())
    return f"{moved} column(s) moved"


def _not_valid_checks(item: PgType) -> list[str]:
    """A new domain's NOT VALID constraints (``CREATE DOMAIN`` takes valid ones only)."""
    name = qn(item.namespace, item.name)
    checks = item.domain.constraints if item.domain else []
    out = [f"ALTER DOMAIN {name} ADD CONSTRAINT {q(c.name)} {c.definition}"
           for c in checks if c.definition.endswith(" NOT VALID")]
    out += [ddl.comment_statement(f"CONSTRAINT {q(c.name)} ON DOMAIN {name}", c.comment)
            for c in checks if c.comment is not None]
    return out


def _statements(text: str) -> list[str]:
    """The statements of a newline-separated ``drop`` (none for an empty one)."""
    return [x for x in text.split("\n") if x]


def _differing(have: list[Any], want: list[Any], sig: Callable[[Any], Any]) -> list[Any]:
    """Live attached objects (by name) that the capture lacks or defines differently."""
    wanted = {w.name: sig(w) for w in want}
    return [h for h in have if wanted.get(h.name, _MISSING) != sig(h)]


_MISSING = object()


def _seq_settings(s: PgSequence) -> tuple[Any, ...]:
    return (s.data_type, s.start, s.increment, s.min_value, s.max_value, s.cache, s.cycle)


def _view_sig(v: PgView) -> tuple[Any, ...]:
    return (v.materialized, v.definition, tuple(v.options),
            tuple((i.name, i.definition) for i in v.indexes))


def quoted_table(t: PgTable) -> str:
    """The table as ``%I.%I`` prints it (how parents and owners are captured)."""
    return f"{_ident(t.namespace)}.{_ident(t.name)}"


def _ident(name: str) -> str:
    import re

    if re.fullmatch(r"[a-z_][a-z0-9_$]*", name):
        return name
    return q(name)


def _table_key_of(owned_by: str | None) -> str | None:
    if not owned_by:
        return None
    parts = _split_quoted(owned_by)
    if len(parts) != 3:
        return None
    return PgTable(namespace=parts[0], name=parts[1]).natural_key()


def _split_quoted(text: str) -> list[str]:
    parts, buf, quoted, i = [], "", False, 0
    while i < len(text):
        ch = text[i]
        if ch == '"':
            if quoted and i + 1 < len(text) and text[i + 1] == '"':
                buf += '"'
                i += 2
                continue
            quoted = not quoted
        elif ch == "." and not quoted:
            parts.append(buf)
            buf = ""
        else:
            buf += ch
        i += 1
    parts.append(buf)
    return parts
