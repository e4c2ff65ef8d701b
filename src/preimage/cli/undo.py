"""``preimage undo`` and ``preimage log``: revert one call's change, and the session's calls."""

from __future__ import annotations

import sys
from typing import Any

import click

from preimage.cli.output import emit_json, err, handle_errors, out, print_table, when, working

__all__ = ["COMMANDS"]


@click.command()
@click.argument("calls", nargs=-1, required=True)
@click.option("--dry-run", is_flag=True, help="Show the plan; change nothing.")
@click.option("--take-backup", "take_backup", is_flag=True,
              help="Conflicts: write the item back as it was before the call.")
@click.option("--keep-live", "keep_live", is_flag=True,
              help="Conflicts: keep the item as it is now, and say so.")
@click.option("--post", "post", default=None,
              help="The after-state to compare with (default: the call's post-call backup).")
@click.option("--only", "only", multiple=True, help="Undo only in this target URI (or part).")
@click.option("--json", "as_json", is_flag=True, help="Machine-readable output.")
@handle_errors
def undo(calls: tuple[str, ...], dry_run: bool, take_backup: bool, keep_live: bool,
         post: str | None, only: tuple[str, ...], as_json: bool) -> None:
    """Revert exactly what one call changed, keeping everything changed since.

    CALL is the backup taken before the call (or after it), the harness's call id,
    `last`, or a range FIRST..LAST of one session (undone newest first).  Items the
    call did not change are never written; items changed since the call in what the
    call changed are conflicts, shown with both versions and left alone unless
    --take-backup or --keep-live says otherwise.  Exit 1 when conflicts are left or an
    item failed.
    """
    import preimage
    from preimage.engine.undo import calls_between, undo_many
    from preimage.store.store import Store

    if take_backup and keep_live:
        raise preimage.UsageError("--take-backup and --keep-live exclude each other")
    resolution = "take-backup" if take_backup else "keep-live" if keep_live else "leave"
    with Store() as store:
        refs: list[str] = []
        for ref in calls:
            if ".." in ref:
                first, _, last = ref.partition("..")
                refs.extend(calls_between(store, first, last))
            else:
                refs.append(ref)
        if post is not None and len(refs) > 1:
            raise preimage.UsageError("--post names the after-state of one call; give one CALL")
        with working("undoing…", not as_json):
            if len(refs) == 1:
                results = [preimage.undo(refs[0], store=store, post=post, only=list(only),
                                         dry_run=dry_run, resolution=resolution)]
            else:
                results = undo_many(refs, store=store, only=list(only), dry_run=dry_run,
                                    resolution=resolution)
    if as_json:
        emit_json([r.to_dict() for r in results] if len(results) > 1 else results[0].to_dict())
    else:
        for r in results:
            _print(r)
    if any(not r.ok or r.conflicts for r in results):
        sys.exit(1)


def _print(result: Any) -> None:
    verb = "plan to undo" if result.dry_run else "undid"
    head = f"{verb} the call of backup {result.backup_id}"
    out.print(head + (f" (after: {result.post_id})" if result.post_id else ""))
    for plan, rep in zip(result.plans, result.reports, strict=False):
        if plan.items:
            rows = []
            for p in plan.items[:200]:
                what = ("remove" if p.want is None else "write back") if p.write else "-"
                if p.fields:
                    what += " " + ", ".join(p.fields[:6])
                rows.append((p.label, p.verdict.value, what, p.note))
            print_table(f"{plan.target}: {plan.summary()}", ("item", "verdict", "what", "note"),
                        rows, len(plan.items) - 200)
        for p in plan.conflicts:
            for c in p.conflicts[:10]:
                out.print(f"  conflict {p.label} {c.path}: before the call {c.base!r}, the call "
                          f"wrote {c.theirs!r}, now {c.live!r}")
        for note in plan.notes:
            out.print(f"  note: {note}")
        failed = [i for i in rep.items if i.outcome.value == "failed"]
        for i in failed:
            err.print(f"  failed: {i.key}: {i.reason}")
        for note in rep.notes:
            if note != plan.summary():
                out.print(f"  note: {note}")
    if result.conflicts:
        out.print(f"{result.conflicts} conflict(s) left alone — run again with --take-backup "
                  "or --keep-live to decide them")
    for note in result.notes:   # the call's parts: what each brought back, and its own undo
        out.print(note)
    if result.undo_backup_id:
        out.print(f"undo this undo with: preimage restore {result.undo_backup_id}")


@click.command()
@click.option("--session", default=None,
              help="The session to show (default: the newest call's; `all` for every one).")
@click.option("--limit", type=int, default=50, show_default=True)
@click.option("--no-delta", "no_delta", is_flag=True, help="Skip reading the deltas (faster).")
@click.option("--json", "as_json", is_flag=True, help="Machine-readable output.")
@handle_errors
def log(session: str | None, limit: int, no_delta: bool, as_json: bool) -> None:
    """The session's timeline: each call, its tier, its backups and what it changed."""
    import preimage

    entries = preimage.timeline(session=session, limit=limit, deltas=not no_delta)
    if as_json:
        emit_json([e.to_dict() for e in entries])
        return
    if not entries:
        out.print("no calls recorded yet — the backup layer records every call it protects")
        return
    rows = []
    for e in entries:
        call = (e.command or e.tool)[:70]
        delta = e.delta + (f" [undone: {', '.join(e.undone_by)}]" if e.undone_by else "")
        rows.append((when(e.created_at), call, e.tier, e.backup_id, e.post_id or "-", delta))
    print_table(f"session {entries[-1].session or '(none)'}",
                ("time (UTC)", "call", "tier", "before", "after", "delta"), rows)
    out.print("undo one with: preimage undo BEFORE (or a range FIRST..LAST, newest first)")


COMMANDS = [undo, log]
