"""The hook's rewrite of a shell call into its supervised form, for a harness started
without ``preimage session``.

With ``observe: true`` in the settings, a Claude Code ``Bash`` call that may change
state becomes ``preimage run --tool-use-id ID --session S -- bash -c 'CMD'``: the
command runs under the supervisor and its file changes are observed into a backup
named by the harness's call id (``preimage undo ID`` finds it).  The layer's reading
still runs first, for what syscalls cannot show (SQL over a socket, ``kubectl``…);
when it took a backup, ``--part-of`` makes the observed one a part of it
(:mod:`preimage.engine.call_parts`), so undoing either undoes the whole call.

Only where it widens nothing the user decides: Claude Code judges a rewritten call
by the user's own permission rules, which match the *original* text
(``Bash(npm test:*)`` does not match ``preimage run … npm test``), so the rewrite is
made only when the hook answers ``allow`` anyway — ``approve: true`` or a session in
``bypassPermissions`` mode.  Elsewhere the call is read, and the answer says why.
Not rewritten either: read-only calls (nothing to observe), calls the layer already
rewrote (``rm`` into the trash is reversible as it is), and calls inside a
``preimage session`` (already supervised).

What the supervised form changes for the command: it runs in a ``bash -c`` of its
own, so a ``cd`` in it does not move the harness's shell, and aliases or functions
from the harness's shell snapshot are not defined in it.
"""

from __future__ import annotations

import shlex
from collections.abc import Mapping

from preimage.layer.call import ToolCall
from preimage.layer.config import LayerConfig
from preimage.layer.decision import Action, Decision

SUPERVISED_HARNESSES = ("claude-code",)


def supervised_form(call: ToolCall, decision: Decision, config: LayerConfig, *, harness: str,
                    permission_mode: str | None, env: Mapping[str, str]) -> None:
    """Rewrite ``decision`` to run ``call`` supervised where the rules above allow it
    (or add a note saying why it was read instead)."""
    if not config.observe or harness not in SUPERVISED_HARNESSES or not call.is_shell:
        return
    if env.get("PREIMAGE_SUPERVISOR") or decision.updated_input is not None or decision.error:
        return
    if decision.tier is None and not decision.findings:
        return   # read-only: nothing to observe
    if decision.tier is None and all(not f.targets and not f.unknown for f in decision.findings):
        return
    if not (config.approve or permission_mode == "bypassPermissions"):
        decision.notes.append(
            "not observed: the supervised form would be judged by your permission rules, "
            "which match the original command; the command line was read instead "
            "(approve: true or bypassPermissions lets it run supervised)")
        return
    command = call.command or ""
    argv = ["preimage", "run"]
    if call.tool_use_id:
        argv += ["--tool-use-id", call.tool_use_id]
    if call.session_id:
        argv += ["--session", call.session_id]
    if decision.backup_id:   # what the reading backed up and the run observes: one call
        argv += ["--part-of", decision.backup_id]
    argv += ["--harness", harness, "--", "bash", "-c", command]
    decision.updated_input = {**call.input, "command": shlex.join(argv)}
    decision.action = Action.REWRITE
    decision.notes.append("Its file changes are observed as it runs (preimage run); "
                          f"`preimage undo {call.tool_use_id or 'last'}` reverts just them.")
