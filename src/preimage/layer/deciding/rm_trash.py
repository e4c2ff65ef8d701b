"""Tier 1, the O(1) way: a plain ``rm`` on the store's filesystem becomes a rename into its trash.

Copying a tree before ``rm -rf`` deletes it costs as much as the tree; moving
it costs one ``rename(2)``.  But a ``PreToolUse`` hook runs *before* the user
approves the call, so the hook itself must not move anything: it rewrites
the command into ``preimage trash --home STORE --backup ID [-r] [-f] -- PATH…``
(:mod:`preimage.engine.trash`), which does the move when — and only if — the call
really runs, and records backup ``ID``; ``preimage restore ID`` renames back.

Only a *plain* ``rm`` is rewritten: options among ``-r -R -f --recursive
--force``, every path named literally (no globs, no variables), no
redirections or wrappers, every path present (or ``-f``), on the store's
filesystem, not a mount point and holding none, not the store or around it,
not holding the shell's working directory, and nothing in it that the mode
or policy would leave out.  Only harnesses known to run the rewritten input
get it: Claude Code and Codex apply ``updatedInput``, Gemini CLI merges
``hookSpecificOutput.tool_input``, preimage's OpenCode plugin merges ``args``
— Codex only when it runs commands outside its sandbox, whose writable roots
leave out the store.  Elsewhere, and for anything less plain, the paths are
captured as before.
"""

from __future__ import annotations

import os
import re
import shlex
import sys
from pathlib import Path

from preimage.connectors.files.address import file_uri
from preimage.layer.call import ToolCall
from preimage.layer.context import Context
from preimage.layer.deciding.policy import Policy, mode_keeps, select_targets
from preimage.layer.decision import Finding, Tier
from preimage.layer.reading.mounts import mount_table
from preimage.layer.reading.shell import SimpleCommand, resolve
from preimage.store.ids import new_backup_id

# Harnesses that run the rewritten command (the trash rewrite takes no copy, so a harness
# that ignored the rewrite would run the original rm unprotected), unless the hook said
# otherwise for the call (``ToolCall.runs_rewrites``: Codex runs it only outside its
# sandbox, which cannot write to the store).  `preimage guard` keeps the capture: its users
# score and diff what it took, which a trash move has no snapshot for.
APPLIES_REWRITES = frozenset({"claude-code", "gemini", "opencode"})
_FLAGS = re.compile(r"^-[rRf]+$")


def preimage_command() -> str:
    """This installation's ``preimage``, as a shell word (absolute, so PATH cannot change it)."""
    exe = Path(sys.executable).parent / "preimage"
    if exe.exists():
        return shlex.quote(str(exe))
    return f"{shlex.quote(sys.executable)} -m preimage"


def leave_call(home: Path, backup_id: str | None, call: ToolCall, *,
               part_of: str | None = None) -> None:
    """Leave ``call`` for the ``preimage trash`` run that records ``backup_id``, so the
    backup names what the agent ran (the command line carries only the ID), and, with
    ``part_of``, the backup the same call took of everything else it changes."""
    if backup_id:
        from preimage.engine.trash import leave_call as leave

        extra = {"part_of": part_of} if part_of else {}
        leave(home, backup_id, {**call.to_record(), "session": call.session_id, **extra})


def mount_points() -> list[str]:
    """Every mount point of this process's namespace (``/proc/self/mountinfo``)."""
    return [point for point, _kind in mount_table()]


def _plain_flags(cmd: SimpleCommand) -> tuple[bool, bool, list[str]] | None:
    """``(recursive, force, operand texts)`` of a plain rm, or ``None``."""
    recursive = force = False
    operands: list[str] = []
    options_done = False
    for w in cmd.words[1:]:
        if w.dynamic or w.glob:
            return None
        text = w.text
        if not options_done and text == "--":
            options_done = True
        elif not options_done and text in ("--recursive", "--force"):
            recursive |= text == "--recursive"
            force |= text == "--force"
        elif not options_done and _FLAGS.match(text):
            recursive |= "r" in text or "R" in text
            force |= "f" in text
        elif not options_done and text.startswith("-") and text != "-":
            return None  # -i, -v, --one-file-system, --no-preserve-root …: not plain
        else:
            operands.append(text)
    return recursive, force, operands


def _why_not(path: str, text: str, ctx: Context, cwds: list[str], mounts: list[str],
             store_dev: int) -> str | None:
    """Why ``path`` cannot be renamed into the trash, or ``None``."""
    if path == "/" or os.path.basename(text.rstrip("/")) in (".", "..") or text.endswith("/."):
        return "rm refuses it"
    try:
        st = os.lstat(path)
    except OSError:
        return "absent"
    if text.endswith("/") and os.path.islink(path):
        return "a symlink named with a trailing slash"
    if st.st_dev != store_dev:
        return "on another filesystem than the store"
    if any(m == path or m.startswith(path.rstrip("/") + "/") for m in mounts):
        return "a mount point, or holds one"
    home = str(ctx.store_home) if ctx.store_home else ""
    if home and (home == path or home.startswith(path + "/") or path.startswith(home + "/")):
        return "the backup store, or around it"
    if any(c == path or c.startswith(path + "/") for c in cwds):
        return "holds the shell's working directory"
    return None


def trash_rewrite(cmd: SimpleCommand, f: Finding, ctx: Context) -> Finding | None:
    """The rename-into-trash rewrite of the ``rm`` ``cmd`` (its capture finding ``f``), or
    ``None`` when the capture stays (see the module docs for what makes an rm plain)."""
    runs = ctx.call.runs_rewrites
    if runs is None:
        runs = ctx.call.harness in APPLIES_REWRITES
    if cmd.name == "rm" and ctx.call.rewrite_stopped:
        # the model hears why its rm was copied into a backup, not moved into the trash
        f.notes.append(f"The rm was not turned into a move into preimage's trash: "
                       f"{ctx.call.rewrite_stopped}, where the store cannot be written; "
                       "what it removes was copied into the backup first instead.")
    if cmd.name != "rm" or not runs or ctx.store_home is None:
        return None
    if os.environ.get("PREIMAGE_STORE"):
        # A shared store: the trash would stay on this machine's disk, which may not
        # outlive the sandbox; the capture goes to the shared store instead.
        return None
    if cmd.wrappers or cmd.redirects or cmd.span is None or not cmd.cwd_known or not f.targets:
        return None
    plain = _plain_flags(cmd)
    if plain is None:
        return None
    recursive, force, operands = plain
    if not operands:
        return None
    keep, _ = mode_keeps(f, ctx.config.mode)
    chosen, _ = select_targets(f, ctx.config.mode, Policy.parse(ctx.config.policy))
    if not keep or len(chosen) != len(f.targets):
        return None  # the mode or policy leaves something out: the usual path handles that
    try:  # a store that cannot hold the trash gets the capture, whose error the answer reports
        ctx.store_home.mkdir(mode=0o700, parents=True, exist_ok=True)
        trash = ctx.store_home / "trash"
        trash.mkdir(mode=0o700, exist_ok=True)
        if not os.access(trash, os.W_OK):
            return None
        store_dev = os.stat(trash).st_dev
    except OSError:
        return None
    cwds = [os.path.normpath(c) for c in (cmd.cwd, ctx.call.cwd) if c]
    mounts = mount_points()
    paths = []
    for text in operands:
        path = resolve(cmd, text)
        why = _why_not(path, text, ctx, cwds, mounts, store_dev)
        if why == "absent" and force:
            continue
        if why:
            return None
        paths.append(path)
    if not paths:
        return None
    backup_id = new_backup_id()
    argv = [preimage_command(), "trash", "--home", shlex.quote(str(ctx.store_home)),
            "--backup", backup_id]
    if ctx.call.session_id:
        argv += ["--session", shlex.quote(ctx.call.session_id)]
    argv += (["-r"] if recursive else []) + (["-f"] if force else [])
    argv += ["--", *(shlex.quote(p) for p in paths)]
    shown = ", ".join(paths[:4]) + (" …" if len(paths) > 4 else "")
    return Finding(
        source=f.source, tier=Tier.REWRITE, rule=f.rule, impact=f.impact, targets=[],
        notes=[f"rm moves {shown} into preimage's trash (a rename on the store's filesystem, "
               f"no copy) as backup {backup_id} when it runs; undo with "
               f"`preimage restore {backup_id}`."],
        wide=f.wide, outside_workspace=f.outside_workspace, rewrite=" ".join(argv), span=f.span,
        rewrite_backup=backup_id, rewrite_targets=[file_uri(p) for p in paths],
    )
