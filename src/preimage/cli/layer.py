"""``preimage hook``, ``install``, ``guard`` and ``rules``: the backup layer's commands.

The main ``preimage`` group attaches :data:`hook`, :data:`install`,
:data:`guard` and :data:`rules` when this module is present.
"""

from __future__ import annotations

import json
import os
import shlex
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

import click

from preimage.cli.output import printable
from preimage.interface.errors import PreimageError, UsageError
from preimage.layer.call import ToolCall
from preimage.layer.config import LayerConfig, Mode

_MODES = click.Choice([m.value for m in Mode])


def _echo(text: str, **kwargs: Any) -> None:
    """``click.echo`` of human text: control characters in it spelled out."""
    click.echo(printable(text), **kwargs)


def _fail(message: str) -> None:
    _echo(f"preimage: {message}", err=True)
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
    """Run as an agent harness's hook (reads the harness's payload on stdin)."""


@click.command("claude-code")
@click.option("--mode", type=_MODES, default=None, help="Capture mode (default: full).")
@click.option("--policy", default=None, help="Plain-words policy, e.g. 'never back up node_modules'.")
@click.option("--workspace", default=None, help="Project directory for workspace snapshots.")
@click.option("--approve", is_flag=True, default=None,
              help="Answer 'allow' for backed-up calls (skips the harness's permission prompt).")
@click.option("--on-failure", type=click.Choice(["allow", "ask", "deny"]), default=None,
              help="What to answer when the backup fails (default: allow, and say so).")
@click.option("--timeout", type=float, default=None, help="Seconds before the call is let through.")
@click.pass_context
def _hook_command(ctx: click.Context, mode: str | None, policy: str | None,
                  workspace: str | None, approve: bool | None, on_failure: str | None,
                  timeout: float | None) -> None:
    """A tool-call hook: the harness's JSON in on stdin, its answer out on stdout.

    claude-code: PreToolUse / PostToolUse(Failure); codex: PreToolUse / PostToolUse;
    gemini: BeforeTool / AfterTool; qwen: PreToolUse / PostToolUse(Failure); opencode,
    kilo: what preimage's plugin for OpenCode (or Kilo Code CLI) sends.
    """
    from preimage.layer.harnesses.hook import handle, log

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


for _name in ("claude-code", "codex", "gemini", "opencode", "qwen", "kilo"):
    hook.add_command(_hook_command, name=_name)


# ------------------------------------------------------------------ install
_SCOPE_OPTIONS = [
    click.option("--project", type=click.Path(file_okay=False), default=None,
                 help="Project directory (default: the current directory)."),
    click.option("--user", "user_scope", is_flag=True,
                 help="The user's own settings (e.g. ~/.claude/settings.json)."),
    click.option("--local", is_flag=True,
                 help="Claude Code only: .claude/settings.local.json (not committed)."),
    click.option("--dry-run", is_flag=True, help="Show the change as a diff; write nothing."),
]


def _scope_options(fn: Any) -> Any:
    for option in reversed(_SCOPE_OPTIONS):
        fn = option(fn)
    return fn


def _scope(user_scope: bool, local: bool) -> str:
    if user_scope and local:
        _fail("--user and --local exclude each other")
    return "user" if user_scope else "local" if local else "project"


def _harnesses(names: tuple[str, ...], every: bool) -> list[str]:
    from preimage.layer.harnesses import ALIASES, harness_names

    if every:
        return harness_names()
    if not names:
        _fail(f"name a harness ({', '.join(harness_names())}), or --all, or --list")
    known = harness_names()
    out = []
    for n in names:
        key = ALIASES.get(n, n)
        if key not in known:
            _fail(f"no adapter for harness {n!r}; known: {', '.join(known)}")
        out.append(key)
    return out


def _apply(change: Any, dry_run: bool, done: str, same: str) -> None:
    if dry_run:
        _echo(change.diff() or f"{change.path}: no change", nl=False)
        if change.diff():
            _echo(f"(dry run: {change.path} not written)")
        else:
            _echo("")
        return
    change.apply()
    _echo(f"{done if change.changed else same}: {change.path}")


@click.command()
@click.argument("names", nargs=-1)
@click.option("--all", "every", is_flag=True, help="Every harness preimage knows.")
@click.option("--list", "listing", is_flag=True, help="Show each harness and where it is installed.")
@_scope_options
@click.option("--mode", type=_MODES, default=None, help="Capture mode baked into the hook.")
@click.option("--on-failure", type=click.Choice(["allow", "ask", "deny"]), default=None,
              help="Baked into the hook: what to do when a backup fails.")
@click.option("--approve", is_flag=True,
              help="Baked into the hook: allow backed-up and rewritten calls without asking "
                   "(Claude Code; the others never ask).")
def install(names: tuple[str, ...], every: bool, listing: bool, project: str | None,
            user_scope: bool, local: bool, dry_run: bool, mode: str | None,
            on_failure: str | None, approve: bool) -> None:
    """Install preimage's hook into agent harnesses: preimage install claude-code codex."""
    from preimage.layer.harnesses.install import plan_install

    base = Path(project or os.getcwd()).absolute()
    if listing:
        _list(base)
        return
    scope = _scope(user_scope, local)
    client = _hook_client(scope, dry_run)
    for name in _harnesses(names, every):
        try:
            change = plan_install(name, scope, base, mode=mode,  # type: ignore[arg-type]
                                  on_failure=on_failure, approve=approve, client=client)
        except UsageError as exc:
            _fail(str(exc))
            return
        _apply(change, dry_run, f"installed {name}", f"{name} already installed")
        if name == "codex" and not dry_run:
            from preimage.layer.harnesses.codex_trust import TRUST_HINT, trusted

            if not trusted(change.path):
                click.echo(f"preimage: note — {TRUST_HINT}", err=True)
    if scope != "user" and not dry_run and shutil.which("preimage") is None:
        _echo("preimage: note — `preimage` is not on this PATH; the harness runs the hook "
                   "by that name (install with pipx or uv tool, or use --user)", err=True)


def _hook_client(scope: str, dry_run: bool) -> str | None:
    """The compiled hook client for a user-scope install (built now if need be; a dry run
    names the one it would build), or ``None`` with a note saying why the hooks run the
    Python client."""
    if scope != "user":
        return None
    from preimage.services.compiled_client import ensure_client, planned_client

    if dry_run:
        planned = planned_client()
        return str(planned) if planned is not None else None
    path, why = ensure_client()
    if path is None:
        _echo(f"preimage: note — the hooks run {why}", err=True)
        return None
    return str(path)


@click.command()
@click.argument("names", nargs=-1)
@click.option("--all", "every", is_flag=True, help="Every harness preimage knows.")
@_scope_options
def uninstall(names: tuple[str, ...], every: bool, project: str | None, user_scope: bool,
              local: bool, dry_run: bool) -> None:
    """Remove preimage's hook from agent harnesses, keeping every other hook."""
    from preimage.layer.harnesses.install import plan_uninstall

    base = Path(project or os.getcwd()).absolute()
    scope = _scope(user_scope, local)
    for name in _harnesses(names, every):
        try:
            change = plan_uninstall(name, scope, base)  # type: ignore[arg-type]
        except UsageError as exc:
            _fail(str(exc))
            return
        _apply(change, dry_run, f"uninstalled {name}", f"{name} was not installed")


def _list(project: Path) -> None:
    from preimage.layer.harnesses import get_harness, harness_names
    from preimage.layer.harnesses.install import NOT_FOUND, status
    from preimage.observe import status_line

    click.echo(status_line())
    rows = [("harness", "binary", "scope", "status", "settings")]
    for name in harness_names():
        adapter = get_harness(name)
        found = "found" if shutil.which(adapter.binary) else "not found"
        for scope in adapter.scopes():
            rows.append((name, found, scope, status(name, scope, project),  # type: ignore[arg-type]
                         str(adapter.settings_path(scope, project))))
    widths = [max(len(r[i]) for r in rows) for i in range(4)]
    for row in rows:
        _echo("  ".join(c.ljust(w) for c, w in zip(row[:4], widths, strict=True))
                   + "  " + row[4])
    if any(NOT_FOUND in r[3] for r in rows):
        _echo(f"'{NOT_FOUND} X': the hook runs X, which is not on this PATH — the harness "
                   "cannot run it either; install preimage with pipx or uv tool, or reinstall "
                   "the hook with --user", err=True)


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
    from preimage.layer.deciding.backup_layer import BackupLayer

    text = command[0] if len(command) == 1 else shlex.join(command)
    cfg = _config(mode, policy, workspace, on_failure=on_failure)
    call = ToolCall.shell(text, cwd=os.getcwd(), env=dict(os.environ))
    call.harness = "guard"
    layer = BackupLayer(config=cfg)
    decision = layer.before(call)
    if as_json:
        click.echo(json.dumps(decision.to_dict(), default=str), err=True)
    elif decision.backup_id or decision.error or decision.notes:
        _echo(f"preimage: {decision.additional_context}", err=True)
    if decision.backup_id:
        _echo(decision.backup_id)
    if dry_run:
        return
    if decision.error and cfg.on_failure != "allow":
        ok = cfg.on_failure == "ask" and sys.stdin.isatty() and click.confirm(
            "the backup failed; run the command anyway?", err=True)
        if not ok:
            _echo("preimage: not run (the backup failed)", err=True)
            sys.exit(3)
    if decision.updated_input is not None:
        argv = ["bash", "-c", str(decision.updated_input["command"])]
    elif len(command) == 1:
        argv = ["bash", "-c", command[0]]
    else:
        argv = list(command)
    try:
        rc = _run_guarded(argv, call, rewritten=decision.updated_input is not None,
                          part_of=decision.backup_id)
    except OSError as exc:
        _fail(f"cannot run {argv[0]}: {exc.strerror}")
        return
    if decision.backup_id:  # the after-state too, so `preimage undo` can revert just this
        from preimage.layer.deciding.completion import ToolResult

        done = layer.after(call, ToolResult("ok" if rc == 0 else "error"), decision)
        if done.post_error:
            _echo(f"preimage: {done.post_error}", err=True)
    sys.exit(rc)


def _run_guarded(argv: list[str], call: ToolCall, *, rewritten: bool,
                 part_of: str | None) -> int:
    """Run the guarded command: under supervision where the system has it (its file
    changes observed into a backup of their own — a part of the reading's backup
    ``part_of`` when it took one: one call, one undo), else as it is.  A rewritten call
    (``rm`` into the trash) is already reversible and runs as it is."""
    from preimage.observe.kernel import unavailable_reason

    reason = None if rewritten else unavailable_reason()
    if rewritten or reason is not None:
        if reason is not None:
            click.echo(f"preimage: file changes were read from the command line, not observed "
                       f"(supervision unavailable: {reason})", err=True)
        return subprocess.call(argv)
    from preimage.observe.supervisor import SupervisionUnavailable, run_command
    from preimage.store.store import Store

    try:
        with Store() as store:
            outcome = run_command(argv, store=store, label=(call.command or call.tool)[:200],
                                  tool_call=call.to_record(), session=call.session_id,
                                  parent_id=part_of)
    except SupervisionUnavailable as exc:
        click.echo(f"preimage: {exc}; running it unobserved", err=True)
        return subprocess.call(argv)
    except PreimageError as exc:
        _fail(str(exc))
        raise
    lines = outcome.summary()
    if part_of and outcome.backup_id:
        lines[0] = (f"observed: {outcome.records} path(s) backed up before they changed in "
                    f"{outcome.backup_id}, a part of this call's backup {part_of} (`preimage "
                    f"undo {part_of}` or `preimage restore {part_of}` covers both)")
    for line in lines:
        click.echo(f"preimage: {line}", err=True)
    return outcome.returncode


# ------------------------------------------------------------------ rules
@click.group()
def rules() -> None:
    """Show the rule table and how a call would be handled."""


@rules.command("list")
@click.option("--json", "as_json", is_flag=True)
def rules_list(as_json: bool) -> None:
    """Every rule: name, tier, impact, where it comes from, what it matches."""
    from preimage.layer.deciding.rules import load_rules

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
        _echo(f"warning: {p}", err=True)
    for row in rows:
        _echo(f"{row['name']:28} {row['tier']:9} {row['impact']:6} {row['source']:8} "
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
    from preimage.layer.deciding.backup_layer import BackupLayer

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
        # a rule of the rewrite class that rewrote nothing only paired the call (as the plan says)
        tier = "pair" if f.tier.value == "rewrite" and not plan.updated_input else f.tier.value
        _echo(f"{f.source[:70]!r}: tier {tier}, rule {f.rule}, impact {f.impact.value}"
                   + (" (unknown)" if f.unknown else ""))
        for t in f.targets:
            _echo(f"    -> {t.uri}")
        if f.forced_by:
            _echo(f"    widened by: {', '.join(f.forced_by)}")
    _echo(f"tier: {doc['tier'] or 'none (pass)'}")
    _echo("would capture: " + (", ".join(t.uri for t in plan.targets) or "nothing"))
    if plan.updated_input:
        _echo(f"rewritten to: {plan.updated_input.get('command')}")
    for n in plan.notes:
        _echo(f"note: {n}")


# ------------------------------------------------------------------ mcp-proxy
@click.command("mcp-proxy", context_settings={"ignore_unknown_options": True,
                                              "allow_interspersed_args": False})
@click.option("--name", default=None,
              help="The server's name in preimage's settings (mcp.NAME); default: the command's.")
@click.option("--url", default=None,
              help="Upstream streamable-HTTP MCP server URL (instead of a command).")
@click.option("--listen", default=None, metavar="HOST:PORT",
              help="Serve streamable HTTP on this loopback address (default: stdio).")
@click.option("--mode", type=_MODES, default=None, help="Capture mode.")
@click.option("--on-failure", type=click.Choice(["allow", "ask", "deny"]), default=None,
              help="When a backup fails: `allow` forwards the call and says so; `deny` and "
                   "`ask` (the default, from the settings' on_failure; a proxy cannot ask) "
                   "refuse it with a tool error.")
@click.argument("command", nargs=-1, type=click.UNPROCESSED)
def mcp_proxy(name: str | None, url: str | None, listen: str | None, mode: str | None,
              on_failure: str | None, command: tuple[str, ...]) -> None:
    """Protect every tool call to an MCP server: preimage mcp-proxy --name pg -- SERVER CMD."""
    import anyio

    from preimage.layer.harnesses.mcp_proxy import serve

    if bool(command) == bool(url):
        _fail("give the upstream server as `-- COMMAND ...` or as --url URL (one of them)")
    where: tuple[str, int] | None = None
    if listen:
        host, _, port = listen.rpartition(":")
        if not port.isdigit() or host not in ("127.0.0.1", "localhost", "::1", "[::1]"):
            _fail(f"--listen {listen!r}: give a loopback HOST:PORT such as 127.0.0.1:8765")
        where = (host.strip("[]"), int(port))
    server = name or (os.path.basename(command[0]) if command else
                      (url or "").split("//", 1)[-1].split("/", 1)[0].split(":", 1)[0])
    cfg = _config(mode, None, None, on_failure=on_failure)
    try:
        anyio.run(lambda: serve(server, cfg, command=list(command) or None, url=url,
                                listen=where))
    except PreimageError as exc:
        _fail(str(exc))
    except (OSError, ConnectionError) as exc:
        _fail(f"cannot reach the MCP server: {exc}")
    except KeyboardInterrupt:
        pass
