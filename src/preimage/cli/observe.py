"""``preimage run -- CMD…``: run a command under supervision, backing up what it changes.

Without supervision on this system (see :func:`preimage.observe.kernel.unavailable_reason`)
the command goes through ``preimage guard`` instead — the command line is read
to decide what to back up — and a line on stderr says so.
"""

from __future__ import annotations

import json
import os
import sys

import click

from preimage.interface.errors import PreimageError
from preimage.observe.supervisor import Outcome


def argv_of(command: tuple[str, ...]) -> list[str]:
    """One word is a shell line (``bash -c``); several are the program and its arguments."""
    return ["bash", "-c", command[0]] if len(command) == 1 else list(command)


@click.command(context_settings={"ignore_unknown_options": True,
                                 "allow_interspersed_args": False})
@click.option("--label", default=None, help="Label of the backup (default: the command).")
@click.option("--session", default=None, help="Session the backup belongs to (preimage log).")
@click.option("--no-post", is_flag=True,
              help="Skip the post-call capture (then `undo` cannot revert just this call; "
                   "`restore` still brings everything back).")
@click.option("--json", "as_json", is_flag=True, help="Print what was recorded as JSON on stderr.")
@click.option("--tool-use-id", default=None,
              help="The harness's id of the call (the hook's rewrite passes it; undo finds it).")
@click.option("--harness", default=None, help="The harness the call came from.")
@click.option("--part-of", default=None, metavar="ID",
              help="The backup the hook took of this call: the observed one becomes a part of "
                   "it, so undo or restore of either covers both.")
@click.argument("command", nargs=-1, type=click.UNPROCESSED, required=True)
@click.pass_context
def run(ctx: click.Context, label: str | None, session: str | None, no_post: bool,
        as_json: bool, tool_use_id: str | None, harness: str | None, part_of: str | None,
        command: tuple[str, ...]) -> None:
    """Run COMMAND with its file changes observed: preimage run -- make clean.

    Every path the command (and every process it starts) is about to change is
    backed up just before the change, into one backup whose ID is printed on
    stderr; `preimage restore ID` brings it all back, `preimage undo ID` only
    what the command changed.  Exits with the command's status.
    """
    from preimage.observe.kernel import unavailable_reason
    from preimage.observe.supervisor import SupervisionUnavailable, run_command
    from preimage.store.store import Store

    reason = unavailable_reason()
    if reason is not None:
        click.echo(f"preimage: supervision unavailable ({reason}); reading the command line "
                   "instead (preimage guard)", err=True)
        from preimage.cli.layer import guard

        ctx.invoke(guard, command=command, workspace=None, mode=None, policy=None,
                   dry_run=False, on_failure=None, as_json=as_json)
        return
    argv = argv_of(command)
    try:
        with Store() as store:
            shown = command[-1] if command[:2] == ("bash", "-c") and len(command) == 3 \
                else " ".join(command)
            call: dict[str, object] = {"tool": "Bash" if harness else "run", "command": shown,
                                       "input": {"command": shown}}
            if tool_use_id:
                call["tool_use_id"] = tool_use_id
            if harness:
                call["harness"] = harness
            outcome = run_command(argv, store=store, label=label or shown,
                                  session=session, post_call=not no_post, tool_call=call,
                                  parent_id=part_of)
    except FileNotFoundError as exc:
        click.echo(f"preimage: cannot run {argv[0]}: {exc.strerror} — check the program name "
                   "and PATH", err=True)
        sys.exit(127)
    except SupervisionUnavailable as exc:
        click.echo(f"preimage: {exc} — the command was not run; `preimage guard -- …` reads "
                   "the command line instead", err=True)
        sys.exit(2)
    except PreimageError as exc:
        click.echo(f"preimage: {exc}", err=True)
        sys.exit(2)
    report(outcome, as_json)
    sys.exit(outcome.returncode)


def report(outcome: Outcome, as_json: bool) -> None:
    """The stderr lines (or JSON document) saying what a supervised call recorded."""
    if as_json:
        click.echo(json.dumps(outcome.to_dict()), err=True)
        return
    for line in outcome.summary():
        click.echo(f"preimage: {line}", err=True)


@click.command(context_settings={"ignore_unknown_options": True,
                                 "allow_interspersed_args": False})
@click.option("--session", "session_id", default=None,
              help="Session id of the backups (default: the start time).")
@click.argument("command", nargs=-1, type=click.UNPROCESSED, required=True)
def session(session_id: str | None, command: tuple[str, ...]) -> None:
    """Run a whole agent harness supervised, one backup per tool call: preimage session -- claude.

    The harness's own file tools, its MCP servers and every shell command it
    runs are watched; preimage's hooks (preimage install) mark where each call
    begins and ends.  Calls that overlap in time share one backup.  Exits with
    the harness's status.
    """
    from preimage.observe.kernel import unavailable_reason
    from preimage.observe.session import run_session
    from preimage.observe.supervisor import SupervisionUnavailable
    from preimage.store.store import Store

    reason = unavailable_reason()
    if reason is not None:
        click.echo(f"preimage: supervision unavailable ({reason}); run the harness as usual — "
                   "its hooks read each call instead", err=True)
        sys.exit(2)
    # the hooks decide in their own process: a decision service they started would live
    # on under the session's filter after the harness is gone
    env = {**os.environ, "PREIMAGE_SERVICE": os.environ.get("PREIMAGE_SERVICE", "off")}
    from preimage.layer.config import log_path
    from preimage.layer.deciding.completion import pending_dir

    # the hooks' own log, and their notes to the post-call hook
    hooks_own = (str(log_path()), str(pending_dir()))
    try:
        with Store() as store:
            outcome = run_session(list(command), store=store, session=session_id, env=env,
                                  ignore=hooks_own)
    except FileNotFoundError as exc:
        click.echo(f"preimage: cannot run {command[0]}: {exc.strerror} — check the program "
                   "name and PATH", err=True)
        sys.exit(127)
    except (SupervisionUnavailable, PreimageError) as exc:
        click.echo(f"preimage: {exc}", err=True)
        sys.exit(2)
    click.echo(f"preimage: session observed {outcome.calls} tool call(s) in "
               f"{len(outcome.backups)} backup(s): {' '.join(outcome.backups) or 'none'} "
               "(preimage log lists them)", err=True)
    sys.exit(outcome.returncode)
