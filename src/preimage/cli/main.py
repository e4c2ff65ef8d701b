"""The ``preimage`` command line.

Exit codes (the README's table is this one):

* ``0`` — done; ``diff``: nothing differs; ``list``: also when the store is empty;
* ``1`` — ``diff``: something differs; ``score``: below ``--min``; ``restore``: some
  item failed; ``check``: problems found; ``demo``: the demo did not score 1.0;
* ``2`` — trouble: bad input (unknown or ambiguous ID, malformed URI, unknown
  scheme), an unreachable server, a corrupt or missing blob, a busy or newer
  store, a full disk — always one line on stderr saying what to do, never a
  traceback;
* ``130`` — interrupted (Ctrl-C); run the same command again.
"""

from __future__ import annotations

import itertools
import sys
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

import click

from preimage.cli.output import (
    JsonArray,
    _fail,
    emit_json,
    err,
    handle_errors,
    iso,
    out,
    print_score_table,
    print_table,
    when,
    working,
)
from preimage.interface.sizes import human_bytes
from preimage.interface.target import redact

if TYPE_CHECKING:
    from preimage.restoration import RestoreReport

__all__ = ["_fail", "err", "handle_errors", "main", "out", "print_score_table", "redact"]


class _LazyGroup(click.Group):
    """A group whose subpackage commands are imported when first named."""

    lazy_loader: Callable[[str], click.Command | None] | None = None
    lazy_names: tuple[str, ...] = ()

    def list_commands(self, ctx: click.Context) -> list[str]:
        names = set(super().list_commands(ctx))
        names.update(n for n in self.lazy_names if self.get_command(ctx, n) is not None)
        return sorted(names)

    def get_command(self, ctx: click.Context, cmd_name: str) -> click.Command | None:
        cmd = super().get_command(ctx, cmd_name)
        if cmd is None and self.lazy_loader is not None and cmd_name in self.lazy_names:
            cmd = self.lazy_loader(cmd_name)
            if cmd is not None:
                self.add_command(cmd, cmd_name)
        return cmd


@click.group(cls=_LazyGroup, context_settings={"help_option_names": ["-h", "--help"]})
@click.version_option(package_name="preimage")
def main() -> None:
    """Capture state before an agent changes it, restore it by backup ID, score the result."""


@main.command()
@click.argument("uris", nargs=-1, required=True)
@click.option("--label", default="", help="A note stored with the backup.")
@click.option("--json", "as_json", is_flag=True, help="Machine-readable output.")
@handle_errors
def capture(uris: tuple[str, ...], label: str, as_json: bool) -> None:
    """Capture the state of every target URI; print the backup ID."""
    import preimage

    with working("capturing…", not as_json):
        backup = preimage.capture(list(uris), label=label)
    if as_json:
        emit_json({
            "id": backup.id,
            "targets": [s.target for s in backup.snapshots],
            "items": sum(len(s.items) for s in backup.snapshots),
            "stored_bytes": backup.stored_bytes,
            "logical_bytes": backup.logical_bytes,
            "seconds": round(backup.seconds, 4),
            "notes": {s.target: s.notes for s in backup.snapshots if s.notes},
            "uncaptured": {s.target: [u.model_dump() for u in s.uncaptured]
                           for s in backup.snapshots if s.uncaptured},
            "store_notes": backup.notes,
        })
        return
    items = sum(len(s.items) for s in backup.snapshots)
    err.print(
        f"captured {len(backup.snapshots)} target(s), {items} item(s), "
        f"{human_bytes(backup.stored_bytes)} new in the store, {backup.seconds:.2f}s"
    )
    for snap in backup.snapshots:
        for note in snap.notes:  # what was not captured, and why
            err.print(f"  note: {snap.target}: {note}")
        for u in snap.uncaptured:
            err.print(f"  not captured: {snap.target}: {u.label()} — {u.reason}")
    for note in backup.notes:
        err.print(f"  store: {note}")
    click.echo(backup.id)


@main.command()
@click.argument("ref")
@click.option("--only", "only", multiple=True, help="Restore only this target URI (or part).")
@click.option("--dry-run", is_flag=True, help="Show the plan; change nothing.")
@click.option(
    "--policy",
    type=click.Choice(["overwrite", "merge", "refuse"]),
    default="overwrite",
    show_default=True,
    help="What to do with live state that changed since the capture.",
)
@click.option("--to", "to", multiple=True, metavar="URI",
              help="Restore into this other target instead (a directory, database, namespace…);"
              " with several targets, pair each --only URI with a --to URI.")
@click.option("--json", "as_json", is_flag=True, help="Machine-readable output.")
@handle_errors
def restore(
    ref: str, only: tuple[str, ...], dry_run: bool, policy: str, to: tuple[str, ...],
    as_json: bool,
) -> None:
    """Restore backup REF (an ID, a unique prefix, or `last`)."""
    import preimage

    mappings: dict[str, Any] = {}
    with working("restoring…", not as_json):
        if to:
            from preimage.engine.elsewhere import restore_to

            moved = restore_to(ref, _destinations(only, to), dry_run=dry_run, conflict=policy,
                               only=list(only))
            result: Any = moved
            mappings = moved.mappings
        else:
            result = preimage.restore(ref, only=list(only), dry_run=dry_run, conflict=policy)
    if as_json:
        emit_json({
            "backup": result.backup_id,
            "undo_backup": result.undo_backup_id,
            "dry_run": result.dry_run,
            "ok": result.ok,
            "reports": [_report_json(r) for r in result.reports],
            **({"mapped": {t: [m.model_dump(mode="json") for m in ms]
                           for t, ms in mappings.items()}} if to else {}),
        })
    else:
        for target, ms in mappings.items():
            for m in ms:
                out.print(f"{target}: mapped {m.text()}")
        for rep in result.reports:
            from preimage.restoration import Outcome

            unchanged = rep.count(Outcome.UNCHANGED)
            shown = len(rep.items) - unchanged
            if shown:
                # the first 200, read as the report is iterated (a long one is on disk)
                first = itertools.islice(
                    (i for i in rep.items if i.outcome is not Outcome.UNCHANGED), 200)
                print_table(f"{'plan for' if dry_run else 'restored'} {rep.target}",
                            ("item", "outcome", "action", "reason"),
                            [(i.key, i.outcome.value, i.action, i.reason) for i in first],
                            shown - 200)
            out.print(f"{rep.target}: {shown} change(s), {unchanged} unchanged")
            for remap in rep.remaps[:50]:
                out.print(f"  id changed: {remap.key} {remap.field}: {remap.old} → {remap.new}")
            for note in rep.notes:
                out.print(f"  note: {note}")
        if result.undo_backup_id:
            out.print(f"undo this restore with: preimage restore {result.undo_backup_id}")
    if not result.ok:
        sys.exit(1)
    if dry_run and not any(r.count_changes() for r in result.reports) and not as_json:
        out.print("nothing to do: the live state already matches the backup")


def _report_json(rep: RestoreReport) -> dict[str, Any]:
    """``rep`` as ``--json`` prints it, its items read as they are printed."""
    doc = rep.model_dump(mode="json", exclude={"items"})
    items = JsonArray(rep.items.fields, len(rep.items))
    head = ("target", "connector", "dry_run")
    return {**{k: doc.pop(k) for k in head}, "items": items, **doc}


def _destinations(only: tuple[str, ...], to: tuple[str, ...]) -> str | dict[str, str]:
    """``--to`` alone, or each ``--only`` paired with the ``--to`` in its position."""
    import preimage

    if len(to) == 1 and len(only) <= 1:
        return to[0]
    if len(to) != len(only):
        raise preimage.UsageError(
            f"{len(to)} --to for {len(only)} --only: give one --to, or pair each --only URI "
            "with its --to URI"
        )
    return dict(zip(only, to, strict=True))


@main.command()
@click.argument("ref")
@click.argument("other", required=False)
@click.option("--only", "only", multiple=True, help="Only this target URI.")
@click.option("--json", "as_json", is_flag=True, help="Machine-readable output.")
@handle_errors
def diff(ref: str, other: str | None, only: tuple[str, ...], as_json: bool) -> None:
    """Show what differs between the live state and backup REF — or between REF and
    OTHER (another backup ID, or any target URI of the same kind).

    Exits like diff(1): 0 when nothing differs, 1 when something does, 2 on trouble.
    """
    import preimage

    with working("comparing…", not as_json):
        if other is not None:
            from preimage.engine.against import diff_backups

            diffs = diff_backups(ref, other, only=list(only))
        else:
            diffs = preimage.diff(ref, only=list(only))
    if as_json:
        emit_json([d.model_dump(mode="json") for d in diffs])
    else:
        from preimage.similarity.render import diff_lines

        for d in diffs:
            for line in diff_lines(d):
                out.print(line)
    if not all(d.empty for d in diffs):
        sys.exit(1)


@main.command()
@click.argument("ref")
@click.option("--only", "only", multiple=True, help="Only this target URI.")
@click.option("--min", "minimum", type=float, default=None, help="Exit 1 below this score.")
@click.option(
    "--on",
    "on",
    default="restorable",
    show_default=True,
    help="Which score --min applies to: restorable (content + metadata), overall, a class "
    "(content, metadata, access, server) or classes joined by '+' (content+metadata+access).",
)
@click.option("--show", "show_n", type=int, default=20, show_default=True,
              help="Differences to list.")
@click.option("--against", "against", default=None, metavar="URI|ID",
              help="Compare with this target (its live state, anywhere) or this other backup "
              "instead of the backup's own target.")
@click.option("--junit", "junit", type=click.Path(dir_okay=False), default=None,
              help="Also write a JUnit XML report to this file (one case per target).")
@click.option("--json", "as_json", is_flag=True, help="Machine-readable output.")
@handle_errors
def score(
    ref: str, only: tuple[str, ...], minimum: float | None, on: str, show_n: int,
    against: str | None, junit: str | None, as_json: bool,
) -> None:
    """Score how faithfully the live state reproduces backup REF.

    With --against, score another target of the same kind (a staging copy restored by
    any tool) or another backup instead; identities that differ by place (root,
    database, namespace) are mapped and listed, not counted as lost.  A class with no
    field in scope scores n/a (null in --json); a gate on it passes, since nothing of
    that class could be lost.
    """
    import preimage
    from preimage.similarity import CLASSES
    from preimage.similarity.render import SCORE_COLUMNS, report_lines

    with working("scoring…", not as_json):
        if against is not None:
            from preimage.engine.against import score_against

            total, per_target = score_against(ref, against, only=list(only))
        else:
            total, per_target = preimage.score(ref, only=list(only))
    try:
        value = total.value(on)
    except ValueError as exc:
        raise preimage.UsageError(f"--on: {exc}") from exc
    if junit is not None:
        from preimage.similarity.junit import junit_xml

        suite = f"preimage score {ref}" + (f" --against {redact(against)}" if against else "")
        try:
            with open(junit, "w", encoding="utf-8") as fh:
                fh.write(junit_xml(suite, per_target, on=on, minimum=minimum))
        except OSError as exc:
            raise preimage.UsageError(
                f"--junit {junit}: cannot write it ({exc.strerror}); pick a writable path"
            ) from exc
    if as_json:
        doc = total.model_dump(mode="json")
        for c in CLASSES:  # restorable and overall stay whole ClassScore objects
            doc[c] = total.score_of(c).score
        doc["differences"] = doc["differences"][: max(show_n, 0)] if show_n >= 0 else []
        doc["targets"] = {
            t: {c: r.score_of(c).score for c in SCORE_COLUMNS} for t, r in per_target
        }
        doc["gate"] = {"on": on, "min": minimum, "value": value}
        emit_json(doc)
    else:
        print_score_table(total, per_target)
        for line in report_lines(total, show_n):
            out.print(f"  {line}")
    if minimum is not None and value is not None and value < minimum:
        err.print(f"score {on} {value:.4f} is below --min {minimum}")
        sys.exit(1)


@main.command(name="list")
@click.option("--limit", type=click.IntRange(min=0), default=30, show_default=True,
              help="Show at most this many (0: all).")
@click.option("--json", "as_json", is_flag=True, help="Machine-readable output.")
@handle_errors
def list_(limit: int, as_json: bool) -> None:
    """List backups, newest first (and say on stderr when more exist than are shown)."""
    from preimage.engine.backups import list_backups
    from preimage.store.store import Store

    with Store() as store:
        rows = list_backups(limit + 1 if limit else None, store=store)
        more = store.catalog.count() - limit if limit and len(rows) > limit else 0
        rows = rows[:limit] if limit else rows
        moved = _trash_by_backup(store)
    if more:   # on stderr, so --json stays one list
        err.print(f"{limit} newest of {limit + more} backups shown; "
                  f"`preimage list --limit 0` lists them all")
    if as_json:
        emit_json([_backup_doc(r, moved.get(r.id, [])) for r in rows])
        return
    if not rows:
        out.print("no backups yet — `preimage capture URI` makes one")
        return
    print_table(None, ("id", "time (UTC)", "kind", "tier", "status", "targets", "stored", "label"),
                [(r.id, when(r.created_at), r.kind, r.tier, r.status,
                  "\n".join(_targets(r, moved.get(r.id, []))), human_bytes(r.stored_bytes),
                  r.label) for r in rows])


def _trash_by_backup(store: Any) -> dict[str, list[tuple[str, str]]]:
    """``(original, stored_at)`` of every trash entry, by backup."""
    out: dict[str, list[tuple[str, str]]] = {}
    for e in store.catalog.trash():
        out.setdefault(e.backup_id, []).append((e.original, e.stored_at))
    return out


def _targets(r: Any, moved: list[tuple[str, str]]) -> list[str]:
    """What backup ``r`` holds: the paths an rm moved into the trash, then its snapshots'
    targets (a restore of a trash move records snapshots of the same paths)."""
    from preimage.engine.trash import entry_target

    out = [entry_target(original) for original, _ in moved]
    return out + [s.target for s in r.snapshots if s.target not in out]


def _backup_doc(r: Any, moved: list[tuple[str, str]] | None = None) -> dict[str, Any]:
    import os

    moved = moved or []
    doc = {
        "id": r.id,
        "created_at": iso(r.created_at),
        "finished_at": iso(r.finished_at),
        "label": r.label,
        "kind": r.kind,
        "tier": r.tier,
        "status": r.status,
        "parent": r.parent_id,
        "session": r.session,
        "tool_call": r.tool_call,
        "stored_bytes": r.stored_bytes,
        "logical_bytes": r.logical_bytes,
        "seconds": r.seconds,
        "targets": _targets(r, moved),
        "snapshots": [
            {"connector": s.connector, "target": s.target, "items": s.items, "digest": s.digest}
            for s in r.snapshots
        ],
        "problems": r.problems,
    }
    if r.kind == "trash":
        from preimage.engine.trash import entry_target

        doc["trash"] = [{"target": entry_target(original), "in_trash": os.path.lexists(stored)}
                        for original, stored in moved]
    return doc


@main.command()
@click.argument("ref")
@click.option("--json", "as_json", is_flag=True, help="Machine-readable output.")
@handle_errors
def show(ref: str, as_json: bool) -> None:
    """Show one backup: its targets, sizes and the call that caused it."""
    from preimage.engine.backups import show as show_backup
    from preimage.engine.trash import moved_paths
    from preimage.store.store import Store

    with Store() as store:
        row = show_backup(ref, store=store)
        doc = _backup_doc(row, moved_paths(store, row.id))
    if as_json:
        emit_json(doc)
        return
    for k, v in doc.items():
        if k == "problems":
            for p in v:
                out.print(f"problem: {p} (`preimage check --repair` drops it)")
        elif k == "snapshots":
            for s in v:
                line = f"  {s['connector']:10} {s['target']}  ({s['items']} items)"
                out.print(line)
        elif k == "targets":
            continue   # each is on a snapshot or trash line
        elif k == "trash":
            for t in v:
                where = "in the trash" if t["in_trash"] else "renamed back"
                out.print(f"  {'trash':10} {t['target']}  ({where})")
        elif v not in (None, ""):
            out.print(f"{k}: {v}")


@main.command()
@click.option("--json", "as_json", is_flag=True, help="Machine-readable output.")
def connectors(as_json: bool) -> None:
    """List connector schemes, whether each is usable here, and how finely undo reverts."""
    from preimage.interface.registry import connector_table

    rows = connector_table()
    if as_json:
        emit_json(rows)
        return
    print_table(None, ("scheme", "source", "extra", "status", "undo"),
                [(r["scheme"], r["source"], r["extra"], r["status"], r["undo"]) for r in rows])


@main.command()
@click.option("--dir", "workdir", type=click.Path(file_okay=False), default=None,
              help="Scratch directory (default: a new temp dir).")
@click.option("--json", "as_json", is_flag=True, help="Machine-readable output.")
@handle_errors
def demo(workdir: str | None, as_json: bool) -> None:
    """Protect a scratch project, destroy it as an agent would, restore it, score it."""
    from preimage.cli.demo import run_demo

    result = run_demo(workdir, say=None if as_json else lambda t: out.print(t, markup=True))
    if as_json:
        emit_json(result)
    if result["restorable"] < 1.0:
        sys.exit(1)


def _attach_store_commands() -> None:
    from preimage.cli.store import COMMANDS
    from preimage.cli.undo import COMMANDS as UNDO_COMMANDS

    for cmd in [*COMMANDS, *UNDO_COMMANDS]:
        main.add_command(cmd)


# Commands that live in subpackages, imported only when named (so `preimage list` does
# not import the backup layer or the benchmark); a subpackage missing from this build
# simply has no command.
_LAZY_COMMANDS = {
    "hook": "preimage.cli.layer", "install": "preimage.cli.layer",
    "uninstall": "preimage.cli.layer", "mcp-proxy": "preimage.cli.layer",
    "guard": "preimage.cli.layer", "rules": "preimage.cli.layer",
    "serve": "preimage.cli.serve",
    "run": "preimage.cli.observe", "session": "preimage.cli.observe",
    "bench": "preimage.cli.bench",
    "store": "preimage.cli.remote", "copy": "preimage.cli.remote",
}


def _lazy_command(name: str) -> click.Command | None:
    import importlib

    module = _LAZY_COMMANDS[name]
    try:
        mod = importlib.import_module(module)
    except ModuleNotFoundError as exc:
        if exc.name and module.startswith(exc.name):
            return None
        raise
    cmd = getattr(mod, name.replace("-", "_"), None)
    return cmd if isinstance(cmd, click.Command) else None


def _attach_optional_commands() -> None:
    """Route the subpackage commands through :func:`_lazy_command`."""
    main.lazy_loader = _lazy_command
    main.lazy_names = tuple(_LAZY_COMMANDS)


_attach_store_commands()
_attach_optional_commands()
