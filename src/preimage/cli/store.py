"""The store's lifecycle commands: forget, prune, check, stats, quota, export, import."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

import click

from preimage.cli.output import (
    emit_json,
    err,
    handle_errors,
    iso,
    out,
    print_table,
    when,
    working,
)
from preimage.interface.sizes import human_bytes


def _store() -> Any:
    from preimage.store.store import Store

    return Store()


def _policy(keep_last: int | None, keep_within: str | None, keep_hourly: int | None,
            keep_daily: int | None, keep_weekly: int | None, keep_monthly: int | None,
            per_session: bool) -> Any:
    from preimage.store.retention import RetentionPolicy, parse_duration

    return RetentionPolicy(
        keep_last=keep_last,
        keep_within=parse_duration(keep_within) if keep_within else None,
        keep_hourly=keep_hourly, keep_daily=keep_daily, keep_weekly=keep_weekly,
        keep_monthly=keep_monthly, per_session=per_session,
    )


def _keep_options(fn: Any) -> Any:
    for option in reversed([
        click.option("--keep-last", type=click.IntRange(min=1), help="Keep the N newest backups."),
        click.option("--keep-within", metavar="DURATION",
                     help="Keep every backup within DURATION (2d, 36h, 1w) of the newest."),
        click.option("--keep-hourly", type=click.IntRange(min=1),
                     help="Keep the newest backup of each of the N newest hours."),
        click.option("--keep-daily", type=click.IntRange(min=1),
                     help="Keep the newest backup of each of the N newest days."),
        click.option("--keep-weekly", type=click.IntRange(min=1),
                     help="Keep the newest backup of each of the N newest weeks."),
        click.option("--keep-monthly", type=click.IntRange(min=1),
                     help="Keep the newest backup of each of the N newest months."),
        click.option("--per-session", is_flag=True,
                     help="Apply the rules to each agent session's backups separately."),
    ]):
        fn = option(fn)
    return fn


@click.command()
@click.argument("refs", nargs=-1)
@_keep_options
@click.option("--prune", "then_prune", is_flag=True, help="Run `prune` afterwards.")
@click.option("--dry-run", is_flag=True, help="Show what would be forgotten; change nothing.")
@click.option("--json", "as_json", is_flag=True, help="Machine-readable output.")
@handle_errors
def forget(refs: tuple[str, ...], keep_last: int | None, keep_within: str | None,
           keep_hourly: int | None, keep_daily: int | None, keep_weekly: int | None,
           keep_monthly: int | None, per_session: bool, then_prune: bool, dry_run: bool,
           as_json: bool) -> None:
    """Remove backups by ID, or those a retention policy does not keep.

    Like `restic forget`: only the catalog entries go; `prune` reclaims the space.
    """
    from preimage.store.prune import forget as do_forget
    from preimage.store.prune import prune

    policy = _policy(keep_last, keep_within, keep_hourly, keep_daily, keep_weekly, keep_monthly,
                     per_session)
    with _store() as store:
        report = do_forget(store, list(refs), policy=None if refs else policy, dry_run=dry_run)
        pruned = prune(store) if then_prune and not dry_run else None
    if as_json:
        emit_json({
            "dry_run": report.dry_run, "policy": report.policy, "kept": report.kept,
            "forgotten": [{"id": r.id, "created_at": iso(r.created_at), "kind": r.kind,
                           "status": r.status, "session": r.session,
                           "targets": [s.target for s in r.snapshots]}
                          for r in report.forgotten],
            "in_use": report.in_use,
            "prune": _prune_doc(pruned) if pruned else None,
        })
        return
    verb = "would forget" if dry_run else "forgot"
    for r in report.forgotten:
        out.print(f"{verb} {r.id}  {when(r.created_at)}  {r.kind:11} {r.status:9} "
                  f"{', '.join(s.target for s in r.snapshots)}")
    out.print(f"{verb} {len(report.forgotten)} backup(s), kept {report.kept}"
              + (f" ({report.policy})" if report.policy else ""))
    if report.in_use:
        out.print(f"kept {', '.join(report.in_use)}: being read (a restore, diff, score, "
                  "undo or export is running); a later forget removes it")
    if pruned:
        _print_prune(pruned)
    elif report.forgotten and not dry_run:
        out.print("run `preimage prune` to reclaim the space")


def _prune_doc(r: Any) -> dict[str, Any]:
    return {
        "dry_run": r.dry_run, "abandoned": r.abandoned,
        "unreferenced_blobs": r.unreferenced_blobs, "unreferenced_bytes": r.unreferenced_bytes,
        "deleted_blobs": r.deleted_blobs, "freed_bytes": r.freed_bytes, "kept_back": r.kept_back,
        "leftovers": r.leftovers, "trash": r.trash, "pending": r.pending,
        "waited_for": r.waited_for,
    }


def _print_prune(r: Any) -> None:
    for b in r.abandoned:
        out.print(f"backup {b} was left open by a killed capture: marked abandoned")
    if r.dry_run:
        out.print(f"would reclaim {r.unreferenced_blobs} unreferenced blob(s), "
                  f"{human_bytes(r.unreferenced_bytes)}, {r.leftovers} leftover(s) and "
                  f"{len(r.trash)} trash director(ies)")
        return
    out.print(f"deleted {r.deleted_blobs} blob(s) and {r.leftovers} leftover(s), "
              f"{len(r.trash)} trash director(ies); reclaimed {human_bytes(r.freed_bytes)}")
    if r.pending:
        out.print(f"{len(r.pending)} prune generation(s) wait for captures still running; "
                  "the next `preimage prune` finishes them")


@click.command()
@click.option("--dry-run", is_flag=True, help="Show what would be reclaimed; change nothing.")
@click.option("--no-wait", is_flag=True,
              help="Do not wait for running captures; a later prune finishes the sweep.")
@click.option("--timeout", type=float, default=None,
              help="Seconds to wait for running captures (default: as long as they run).")
@click.option("--json", "as_json", is_flag=True, help="Machine-readable output.")
@handle_errors
def prune(dry_run: bool, no_wait: bool, timeout: float | None, as_json: bool) -> None:
    """Reclaim every blob no backup references, partial writes, and forgotten trash.

    Two-phase, as `restic prune`: safe while captures run in parallel.
    """
    from preimage.store.prune import prune as do_prune

    with _store() as store, working("pruning…", not as_json):
        report = do_prune(store, wait=not no_wait, timeout=timeout, dry_run=dry_run,
                          say=lambda t: err.print(t))  # noqa: PLW0108 — rich only if it prints
    if as_json:
        emit_json(_prune_doc(report))
    else:
        _print_prune(report)


@click.command()
@click.option("--read-data", is_flag=True, help="Read and hash every referenced blob.")
@click.option("--repair", is_flag=True, help="Fix what can be fixed without inventing data.")
@click.option("--json", "as_json", is_flag=True, help="Machine-readable output.")
@handle_errors
def check(read_data: bool, repair: bool, as_json: bool) -> None:
    """Check catalog ↔ snapshots ↔ blobs; name every problem; exit 1 when any remain."""
    from preimage.store.check import check as do_check

    with _store() as store, working("checking…", not as_json):
        report = do_check(store, read_data=read_data, repair=repair)
    if as_json:
        emit_json({"ok": report.ok, "read_data": report.read_data, "repair": report.repair,
                   "backups": report.backups, "blobs_checked": report.blobs_checked,
                   "problems": [p.to_dict() for p in report.problems], "notes": report.notes})
    else:
        for p in report.problems:
            fixed = " [repaired]" if p.repaired else (f" (--repair: {p.repair})" if p.repair else "")
            out.print(f"problem: {p.message}{fixed}")
        for note in report.notes:
            out.print(f"note: {note}")
        data = "read and hashed" if read_data else "present (use --read-data to hash them)"
        out.print(f"checked {report.backups} backup(s) and {report.blobs_checked} blob(s), "
                  f"{data}: {len(report.problems)} problem(s)")
    if not report.ok:
        sys.exit(1)


@click.command()
@click.option("--json", "as_json", is_flag=True, help="Machine-readable output.")
@handle_errors
def stats(as_json: bool) -> None:
    """Size of the store, what deduplication and compression save, per target and session."""
    from preimage.store.stats import stats as do_stats

    with _store() as store, working("measuring…", not as_json):
        doc = do_stats(store)
    if as_json:
        emit_json(doc)
        return
    out.print(f"store {doc['home']} (format {doc['format']}): {doc['backups']} backup(s) "
              f"{doc['by_status']}, {doc['blobs']} blob(s)")
    out.print(f"stored {human_bytes(doc['stored_bytes'])}; restore size "
              f"{human_bytes(doc['restore_size'])}; dedup x{doc['dedup_ratio']}, compression "
              f"x{doc['compression_ratio']}, together x{doc['total_ratio']}")
    if doc["unreferenced_bytes"]:
        out.print(f"unreferenced: {human_bytes(doc['unreferenced_bytes'])} "
                  "(`preimage prune` reclaims it)")
    if doc["trash_bytes"]:
        out.print(f"trash: {human_bytes(doc['trash_bytes'])}")
    for title, key in (("per target", "per_target"), ("per session", "per_session")):
        if not doc[key]:
            continue
        print_table(title, (title.split()[1], "backups", "restore size", "only here"),
                    [(name, str(row["backups"]), human_bytes(row["restore_size"]),
                      human_bytes(row["unique_stored"])) for name, row in doc[key].items()])


@click.command()
@click.option("--max-size", metavar="SIZE", help="Store size cap (20GiB); 0 removes it.")
@click.option("--max-file-size", metavar="SIZE",
              help="Files larger than this are recorded as not captured; 0 removes it.")
@_keep_options
@click.option("--clear-policy", is_flag=True, help="Remove the retention policy.")
@click.option("--json", "as_json", is_flag=True, help="Machine-readable output.")
@handle_errors
def quota(max_size: str | None, max_file_size: str | None, keep_last: int | None,
          keep_within: str | None, keep_hourly: int | None, keep_daily: int | None,
          keep_weekly: int | None, keep_monthly: int | None, per_session: bool,
          clear_policy: bool, as_json: bool) -> None:
    """Show or set the store's quotas and the retention policy they apply."""
    from dataclasses import replace

    from preimage.store import quota as _quota

    policy = _policy(keep_last, keep_within, keep_hourly, keep_daily, keep_weekly, keep_monthly,
                     per_session)
    with _store() as store:
        current = _quota.load(store)
        new = current
        if max_size is not None:
            new = replace(new, max_size=_quota.parse_size(max_size) or None)
        if max_file_size is not None:
            new = replace(new, max_file_size=_quota.parse_size(max_file_size) or None)
        if clear_policy:
            new = replace(new, policy=type(policy)())
        elif not policy.empty:
            new = replace(new, policy=policy)
        if new != current:
            _quota.save(store, new)
        used = _quota.usage(store)
    if as_json:
        emit_json({**new.to_dict(), "usage": used})
        return
    out.print(f"store size: {human_bytes(used)}"
              + (f" of {human_bytes(new.max_size)} allowed" if new.max_size else " (no cap)"))
    out.print("per-file cap: " + (human_bytes(new.max_file_size) if new.max_file_size else "none"))
    out.print(f"retention policy applied over the cap: {new.policy.describe()}")


@click.command(name="export")
@click.argument("ref")
@click.option("-o", "--output", type=click.Path(dir_okay=False, path_type=Path),
              help="Write here instead of stdout.")
@handle_errors
def export_cmd(ref: str, output: Path | None) -> None:
    """Write backup REF as one verifiable archive (.tar.zst): `preimage export ID > file`."""
    from preimage.interface.errors import UsageError
    from preimage.store.archive import export_backup

    if output is None and sys.stdout.isatty():
        raise UsageError("the archive is binary — redirect it: preimage export ID > backup.tar.zst")
    with _store() as store:
        backup = store.catalog.get(ref)
        if backup.kind == "observed":
            # files it keeps linked in the trash go in as snapshots: the archive's trash
            # entries would carry their times only to the microsecond
            from preimage.engine.observed_links import materialize

            materialize(store, backup)
        if output is None:
            manifest = export_backup(store, ref, sys.stdout.buffer)
            sys.stdout.buffer.flush()
        else:
            tmp = output.with_name(output.name + ".part")
            with open(tmp, "wb") as fh:
                manifest = export_backup(store, ref, fh)
            tmp.replace(output)
    n = len({d for s in manifest["snapshots"] for d in s["refs"]})
    err.print(f"exported backup {manifest['backup']['id']}: {len(manifest['snapshots'])} "
              f"target(s), {n} blob(s)")


@click.command(name="import")
@click.argument("archive", type=click.Path(dir_okay=False, allow_dash=True, path_type=Path))
@click.option("--json", "as_json", is_flag=True, help="Machine-readable output.")
@handle_errors
def import_cmd(archive: Path, as_json: bool) -> None:
    """Add the backup in ARCHIVE (from `preimage export`; - for stdin) to this store."""
    from preimage.store.archive import import_backup

    with _store() as store:
        if str(archive) == "-":
            result = import_backup(store, sys.stdin.buffer)
        else:
            try:
                fh = open(archive, "rb")  # noqa: SIM115 - closed below
            except OSError as exc:
                from preimage.interface.errors import UsageError

                raise UsageError(f"cannot read {archive}: {exc.strerror}") from exc
            with fh:
                result = import_backup(store, fh)
    if as_json:
        emit_json({"id": result.backup_id, "blobs": result.blobs, "new_bytes": result.new_bytes,
                   "already_present": result.already_present})
        return
    if result.already_present:
        err.print(f"backup {result.backup_id} is already in this store; nothing to do")
    else:
        err.print(f"imported backup {result.backup_id}: {result.blobs} blob(s), "
                  f"{human_bytes(result.new_bytes)} new in the store")
    click.echo(result.backup_id)


COMMANDS = [forget, prune, check, stats, quota, export_cmd, import_cmd]
