"""``preimage hook``, ``install``, ``guard`` and ``rules``: the backup layer's commands.

The main ``preimage`` group attaches :data:`hook`, :data:`install`,
:data:`guard` and :data:`rules` when this module is present.
"""

from __future__ import annotations

import json
import os
import shlex
import subprocess
import sys
from pathlib import Path
from typing import Any

import click

from preimage._errors import PreimageError, UsageError
from preimage.layer.call import ToolCall
from preimage.layer.config import LayerConfig, Mode

_MODES = click.Choice([m.value for m in Mode])


def _fail(message: str) -> None:
    click.echo(f"preimage: {message}", err=True)
    sys.exit(2)


def _config(mode: str | None, policy: str | None, workspace: str | None, **kw: Any) -> LayerConfig:
    try:
        return LayerConfig.load(mode=mode, policy=policy,
                                workspace=os.path.abspath(workspace) if workspace else None, **kw)
    except PreimageError as exc:
        _fail(str(exc))
        raise


# ------------------------------------------------------------------ hook
@click.group()
def hook() -> None:
    """Run as an agent harness's hook (reads the payload on stdin)."""


@hook.command("claude-code")
@click.option("--mode", type=_MODES, default=None, help="Capture mode (default: full).")
@click.option("--policy", default=None, help="Plain-words policy, e.g. 'never back up node_modules'.")
@click.option("--workspace", default=None, help="Project directory for workspace snapshots.")
@click.option("--approve", is_flag=True, default=None,
              help="Answer 'allow' for backed-up calls (skips the harness's permission prompt).")
@click.option("--on-failure", type=click.Choice(["allow", "ask", "deny"]), default=None,
              help="What to answer when the backup fails (default: allow, and say so).")
@click.option("--timeout", type=float, default=None, help="Seconds before the call is let through.")
@click.pass_context
def hook_claude_code(ctx: click.Context, mode: str | None, policy: str | None,
                     workspace: str | None, approve: bool | None, on_failure: str | None,
                     timeout: float | None) -> None:
    """A PreToolUse hook for Claude Code and Codex: JSON in on stdin, JSON out on stdout."""
    from preimage.layer.hook import handle, log

    try:
        text = sys.stdin.read()
    except (OSError, UnicodeDecodeError) as exc:
        log({"event": "stdin-error", "error": str(exc)})
        text = ""
    args: list[str] = []
    for flag, value in (("--mode", mode), ("--policy", policy), ("--workspace", workspace),
                        ("--on-failure", on_failure), ("--timeout", timeout)):
        if value is not None:
            args += [flag, str(value)]
    if approve:
        args.append("--approve")
    outcome = handle(ctx.info_name or "claude-code", args, text)
    sys.stdout.write(outcome.stdout + "\n")
    sys.stderr.write(outcome.stderr)
    sys.stdout.flush()
    sys.stderr.flush()
    os._exit(outcome.exit_code)  # a capture thread that overran its deadline must not hold the harness


hook.add_command(hook_claude_code, name="codex")  # Codex reads and writes the same JSON


# ------------------------------------------------------------------ install
@click.group()
def install() -> None:
    """Install preimage's hook into an agent harness."""


@install.command("claude-code")
@click.option("--project", type=click.Path(file_okay=False), default=None,
              help="Project directory (default: the current directory).")
@click.option("--user", "user_scope", is_flag=True, help="Write ~/.claude/settings.json instead.")
@click.option("--local", is_flag=True, help="Write .claude/settings.local.json (not committed).")
@click.option("--mode", type=_MODES, default=None, help="Capture mode baked into the hook.")
@click.option("--matcher", default="*", show_default=True, help="Which tools the hook sees.")
def install_claude_code_cmd(project: str | None, user_scope: bool, local: bool, mode: str | None,
                            matcher: str) -> None:
    """Write the PreToolUse hook into .claude/settings.json, keeping every other setting."""
    from preimage.layer.install import hook_command, install_claude_code

    if user_scope:
        settings = Path.home() / ".claude" / "settings.json"
    else:
        base = Path(project or os.getcwd())
        settings = base / ".claude" / ("settings.local.json" if local else "settings.json")
    extra = f"--mode {mode}" if mode else ""
    try:
        path, changed = install_claude_code(settings, hook_command(extra), matcher=matcher)
    except UsageError as exc:
        _fail(str(exc))
        return
    click.echo(f"{'installed' if changed else 'already installed'}: PreToolUse hook in {path}")


# ------------------------------------------------------------------ guard
@click.command(context_settings={"ignore_unknown_options": True, "allow_interspersed_args": False})
@click.option("--workspace", default=None, help="Project directory for workspace snapshots.")
@click.option("--mode", type=_MODES, default=None)
@click.option("--policy", default=None)
@click.option("--dry-run", is_flag=True, help="Decide and back up, but do not run the command.")
@click.option("--on-failure", type=click.Choice(["allow", "ask", "deny"]), default=None,
              help="When the backup fails: run anyway (default), ask, or do not run (exit 3).")
@click.option("--json", "as_json", is_flag=True, help="Print the decision as JSON on stderr.")
@click.argument("command", nargs=-1, type=click.UNPROCESSED, required=True)
def guard(workspace: str | None, mode: str | None, policy: str | None, dry_run: bool,
          on_failure: str | None, as_json: bool, command: tuple[str, ...]) -> None:
    """Back up what COMMAND will change, then run it: preimage guard -- rm -rf build."""
    from preimage.layer.layer import BackupLayer

    text = command[0] if len(command) == 1 else shlex.join(command)
    cfg = _config(mode, policy, workspace, on_failure=on_failure)
    call = ToolCall.shell(text, cwd=os.getcwd(), env=dict(os.environ))
    call.harness = "guard"
    decision = BackupLayer(config=cfg).before(call)
    if as_json:
        click.echo(json.dumps(decision.to_dict(), default=str), err=True)
    elif decision.backup_id or decision.error or decision.notes:
        click.echo(f"preimage: {decision.additional_context}", err=True)
    if decision.backup_id:
        click.echo(decision.backup_id)
    if dry_run:
        return
    if decision.error and cfg.on_failure != "allow":
        ok = cfg.on_failure == "ask" and sys.stdin.isatty() and click.confirm(
            "the backup failed; run the command anyway?", err=True)
        if not ok:
            click.echo("preimage: not run (the backup failed)", err=True)
            sys.exit(3)
    if decision.updated_input is not None:
        argv = ["bash", "-c", str(decision.updated_input["command"])]
    elif len(command) == 1:
        argv = ["bash", "-c", command[0]]
    else:
        argv = list(command)
    try:
        rc = subprocess.call(argv)
    except OSError as exc:
        _fail(f"cannot run {argv[0]}: {exc.strerror}")
        return
    sys.exit(rc)


# ------------------------------------------------------------------ rules
@click.group()
def rules() -> None:
    """Show the rule table and how a call would be handled."""


@rules.command("list")
@click.option("--json", "as_json", is_flag=True)
def rules_list(as_json: bool) -> None:
    """Every rule: name, tier, impact, where it comes from, what it matches."""
    from preimage.layer.rules import load_rules

    rs = load_rules()
    rows = []
    for r in rs.rules:
        m = r.match
        what = " ".join(filter(None, [
            ",".join(m.command[:4]) + ("…" if len(m.command) > 4 else ""),
            ("[" + ",".join(m.subcommand[:3]) + ("…" if len(m.subcommand) > 3 else "") + "]")
            if m.subcommand else "",
            ",".join(m.tool[:4]), ("mcp:" + ",".join(m.mcp_kind)) if m.mcp_kind else "",
            ",".join(m.mcp_tool[:3])]))
        rows.append({"name": r.name, "tier": r.tier, "impact": r.impact, "source": r.source,
                     "origin": r.origin, "match": what,
                     "targets": r.targets or ([f"extract:{r.extract}"] if r.extract else [])})
    if as_json:
        click.echo(json.dumps(rows, indent=2))
        return
    for p in rs.problems:
        click.echo(f"warning: {p}", err=True)
    for row in rows:
        click.echo(f"{row['name']:28} {row['tier']:9} {row['impact']:6} {row['source']:8} "
                   f"{row['match'][:60]:60} {' '.join(row['targets'])}")


@rules.command("explain")
@click.argument("command", required=False)
@click.option("--tool", default=None, help="A non-shell tool name (e.g. Write, mcp__pg__query).")
@click.option("--input", "tool_input", default=None, help="The tool's input as JSON.")
@click.option("--cwd", default=None, help="Working directory of the call.")
@click.option("--mode", type=_MODES, default=None)
@click.option("--policy", default=None)
@click.option("--workspace", default=None)
@click.option("--json", "as_json", is_flag=True)
def rules_explain(command: str | None, tool: str | None, tool_input: str | None, cwd: str | None,
                  mode: str | None, policy: str | None, workspace: str | None,
                  as_json: bool) -> None:
    """Which tier and rule a call takes and what it would capture (nothing is captured)."""
    from preimage.layer.layer import BackupLayer

    cwd = os.path.abspath(cwd or os.getcwd())
    if tool:
        try:
            data = json.loads(tool_input or "{}")
        except ValueError as exc:
            _fail(f"--input is not JSON: {exc}")
            return
        call = ToolCall(tool, data if isinstance(data, dict) else {}, cwd)
    elif command:
        call = ToolCall.shell(command, cwd=cwd)
    else:
        _fail("give a shell command, or --tool NAME --input JSON")
        return
    plan = BackupLayer(config=_config(mode, policy, workspace)).plan(call)
    doc = {
        "tier": plan.tier.value if plan.tier else None,
        "rules": plan.rules,
        "would_capture": [t.uri for t in plan.targets],
        "wanted": [t.uri for t in plan.wanted],
        "notes": plan.notes,
        "rewrite": plan.updated_input,
        "findings": [f.to_dict() for f in plan.findings],
        "decision_seconds": round(plan.seconds, 6),
    }
    if as_json:
        click.echo(json.dumps(doc, indent=2))
        return
    for f in plan.findings:
        click.echo(f"{f.source[:70]!r}: tier {f.tier.value}, rule {f.rule}, impact {f.impact.value}"
                   + (" (unknown)" if f.unknown else ""))
        for t in f.targets:
            click.echo(f"    -> {t.uri}")
        if f.forced_by:
            click.echo(f"    widened by: {', '.join(f.forced_by)}")
    click.echo(f"tier: {doc['tier'] or 'none (pass)'}")
    click.echo("would capture: " + (", ".join(t.uri for t in plan.targets) or "nothing"))
    if plan.updated_input:
        click.echo(f"rewritten to: {plan.updated_input.get('command')}")
    for n in plan.notes:
        click.echo(f"note: {n}")
