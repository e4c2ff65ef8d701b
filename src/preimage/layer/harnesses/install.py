"""Writing preimage's hooks into each harness's settings, and taking them out again.

Every edit is planned first as a :class:`Change` (the file's text before and after),
so ``--dry-run`` can show the diff and the write is one atomic rename.  Edits keep
every other key, hook and matcher; running ``install`` twice changes nothing the
second time; ``uninstall`` removes only preimage's own entries.

Which ``preimage`` the harness runs:

* **project scope** (a file teams commit: ``.claude/settings.json``,
  ``.codex/hooks.json``, ``.gemini/settings.json``, ``.opencode/plugin/``,
  ``.kilo/plugin/``): always the
  bare name ``preimage``, resolved on each machine's ``PATH`` — never the absolute
  path of one machine's virtualenv;
* **user scope** (the user's own ``~/.claude/settings.json`` …): the bare name when
  ``preimage`` on ``PATH`` is this installation, else this installation's absolute
  path — harnesses started from a desktop launcher or an IDE often run with a
  ``PATH`` that lacks the virtualenv, and a hook that cannot be found protects
  nothing.  The file is the user's own and names their own machine.
"""

from __future__ import annotations

import difflib
import json
import os
import re
import shlex
import shutil
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from preimage.interface.errors import UsageError
from preimage.layer.harnesses import get_harness, install_record, jsonc
from preimage.layer.harnesses._base import Harness, Scope
from preimage.layer.harnesses.install_record import InstallRecord

if TYPE_CHECKING:
    from preimage.layer.harnesses.opencode import OpenCode

HOOK_TIMEOUT_SECONDS = 60   # above the layer's own 45 s deadline, so preimage answers first
# Folders install may have created, removed again by uninstall when it leaves them empty.
_SETTINGS_FOLDERS = frozenset({".claude", ".codex", ".gemini", ".opencode", ".qwen", ".kilo",
                               "plugin"})


@dataclass(frozen=True)
class HookSpec:
    """How a harness with JSON command hooks lists them."""

    events: tuple[str, ...]
    matcher: str
    timeout: int          # in the harness's unit
    extra: tuple[tuple[str, Any], ...] = ()


SPECS = {
    "claude-code": HookSpec(("PreToolUse", "PostToolUse", "PostToolUseFailure"), "*",
                            HOOK_TIMEOUT_SECONDS),
    "codex": HookSpec(("PreToolUse", "PostToolUse"), "*", HOOK_TIMEOUT_SECONDS),
    "gemini": HookSpec(("BeforeTool", "AfterTool"), ".*", HOOK_TIMEOUT_SECONDS * 1000,
                       (("name", "preimage"),)),
    "qwen": HookSpec(("PreToolUse", "PostToolUse", "PostToolUseFailure"), "*",
                     HOOK_TIMEOUT_SECONDS, (("name", "preimage"),)),
}


@dataclass(frozen=True)
class Change:
    """One file's text before and after an edit (``None`` for a file that is absent).

    An install's change (``installing``) records the file as it was on its first write;
    an uninstall's (``record``: that record) drops it, and removes what the harness put
    into the folders install created (:mod:`preimage.layer.harnesses.install_record`)."""

    path: Path
    before: str | None
    after: str | None
    installing: bool = False
    record: InstallRecord | None = None

    @property
    def changed(self) -> bool:
        """Whether applying the change would alter the file."""
        return self.before != self.after

    def diff(self) -> str:
        """A unified diff of the change ("" when there is none)."""
        a = (self.before or "").splitlines(keepends=True)
        b = (self.after or "").splitlines(keepends=True)
        return "".join(difflib.unified_diff(
            a, b, f"{self.path}" if self.before is not None else "/dev/null",
            f"{self.path}" if self.after is not None else "/dev/null"))

    def apply(self) -> None:
        """Write the change atomically (or remove the file, and the harness's settings
        folder it leaves empty)."""
        if not self.changed:
            return
        if self.installing:
            install_record.keep(self.path, self.before,
                                install_record.created_folders(self.path))
        if self.after is None:
            self.path.unlink(missing_ok=True)
            for folder in (self.path.parent, self.path.parent.parent):
                if folder.name not in _SETTINGS_FOLDERS:
                    break
                try:
                    folder.rmdir()        # only when empty
                except OSError:
                    break
        if self.record is not None:
            if self.after is None:
                install_record.remove_leftovers(self.record)
            install_record.forget(self.path)
        if self.after is None:
            return
        self.path.parent.mkdir(parents=True, exist_ok=True)
        tmp = self.path.with_name(f".{self.path.name}.{os.getpid()}.tmp")
        tmp.write_text(self.after)
        if self.path.exists():
            os.chmod(tmp, self.path.stat().st_mode & 0o777)
        os.replace(tmp, self.path)


# ------------------------------------------------------------------ the command line
def preimage_executable(scope: Scope) -> str:
    """The ``preimage`` the harness should run for ``scope`` (see the module docstring)."""
    if scope != "user":
        return "preimage"
    mine = Path(sys.executable).parent / "preimage"
    found = shutil.which("preimage")
    if not mine.exists():
        return "preimage"
    if found and Path(found).resolve() == mine.resolve():
        return "preimage"
    return str(mine)


def hook_command(harness: str, scope: Scope, options: list[str],
                 client: str | None = None) -> str:
    """The shell command line of preimage's hook for ``harness``.

    With ``client`` (the compiled hook client, :mod:`preimage.services.compiled_client`;
    user scope only — its path is this machine's) the line runs it when it is there and
    the Python client when it is not, so a client deleted from the cache never leaves a
    call unprotected."""
    python = shlex.join([preimage_executable(scope), "hook", harness, *options])
    if client is None or scope != "user":
        return python
    quoted = shlex.quote(client)
    return f"[ -x {quoted} ] && exec {quoted} {python}; exec {python}"


_CLIENT_FORM = re.compile(r"^\[ -x (?P<client>.+?) \] && exec (?P=client) (?P<python>.+); "
                          r"exec (?P=python)$")


def split_hook_command(command: str) -> tuple[str | None, str]:
    """``(compiled client or None, the Python client's command line)`` of a hook command
    :func:`hook_command` wrote."""
    form = _CLIENT_FORM.match(command)
    if form is None:
        return None, command
    try:
        client = shlex.split(form.group("client"))
    except ValueError:
        return None, command
    return (client[0] if len(client) == 1 else None), form.group("python")


def _is_ours(command: object, harness: str) -> bool:
    return isinstance(command, str) and re.search(
        rf"(^|[/\s'\"])preimage['\"]?\s+hook\s+{re.escape(harness)}(\s|$)", command) is not None


# ------------------------------------------------------------------ JSON settings
def _load(path: Path, comments: bool = False) -> tuple[str | None, dict[str, Any]]:
    """The file's text and its JSON object (``comments``: as the harness reads it, with
    ``//`` and ``/* */`` comments and trailing commas)."""
    if not path.exists():
        return None, {}
    try:
        text = path.read_text()
    except OSError as exc:
        raise UsageError(f"cannot read {path}: {exc.strerror}; nothing was changed") from exc
    try:
        data = (jsonc.loads(text) if comments else json.loads(text)) if text.strip() else {}
    except ValueError as exc:
        raise UsageError(f"{path} is not valid JSON ({exc}); fix it first — "
                         "nothing was changed") from exc
    if not isinstance(data, dict):
        raise UsageError(f"{path} does not hold a JSON object; nothing was changed")
    return text, data


def _event_lists(path: Path, data: dict[str, Any], events: tuple[str, ...],
                 create: bool) -> dict[str, list[Any]]:
    hooks = data.get("hooks")
    if hooks is None and create:
        hooks = data["hooks"] = {}
    if hooks is None:
        return {}
    if not isinstance(hooks, dict):
        raise UsageError(f"{path}: 'hooks' is not an object; nothing was changed")
    lists: dict[str, list[Any]] = {}
    for event in events:
        groups = hooks.get(event)
        if groups is None and create:
            groups = hooks[event] = []
        if groups is None:
            continue
        if not isinstance(groups, list):
            raise UsageError(f"{path}: 'hooks.{event}' is not a list; nothing was changed")
        lists[event] = groups
    return lists


def _strip_ours(groups: list[Any], harness: str) -> None:
    """Remove preimage's hooks (and groups left empty by that) from one event's list."""
    for group in list(groups):
        if not isinstance(group, dict) or not isinstance(group.get("hooks"), list):
            continue
        kept = [h for h in group["hooks"]
                if not (isinstance(h, dict) and _is_ours(h.get("command"), harness))]
        if len(kept) != len(group["hooks"]):
            if kept:
                group["hooks"] = kept
            else:
                groups.remove(group)


def _dump(data: dict[str, Any]) -> str:
    return json.dumps(data, indent=2) + "\n"


def plan_json_install(adapter: Harness, path: Path, command: str) -> Change:
    """Add (or update) preimage's hooks in a JSON settings file, keeping everything else."""
    spec = SPECS[adapter.name]
    before, data = _load(path, adapter.settings_comments)
    wanted = {"type": "command", "command": command, "timeout": spec.timeout, **dict(spec.extra)}
    for groups in _event_lists(path, data, spec.events, create=True).values():
        ours = [h for g in groups if isinstance(g, dict) and isinstance(g.get("hooks"), list)
                for h in g["hooks"] if isinstance(h, dict) and _is_ours(h.get("command"),
                                                                         adapter.name)]
        if len(ours) == 1 and ours[0] == wanted and any(
                g.get("matcher") == spec.matcher and ours[0] in g.get("hooks", [])
                for g in groups if isinstance(g, dict)):
            continue
        _strip_ours(groups, adapter.name)
        groups.append({"matcher": spec.matcher, "hooks": [wanted]})
    after = _dump(data)
    if before is not None and _same(before, data, adapter):
        after = before  # nothing to do: keep the file byte for byte
    return Change(path, before, after, installing=True)


def _same(text: str, data: dict[str, Any], adapter: Harness) -> bool:
    """Whether settings ``text`` means ``data``."""
    try:
        parsed = jsonc.loads(text) if adapter.settings_comments else json.loads(text)
    except ValueError:
        return False
    return bool(parsed == data or (not text.strip() and not data))


def plan_json_uninstall(adapter: Harness, path: Path) -> Change:
    """Remove preimage's hooks from a JSON settings file, keeping everything else."""
    spec = SPECS[adapter.name]
    before, data = _load(path, adapter.settings_comments)
    if before is None:
        return Change(path, None, None)
    lists = _event_lists(path, data, spec.events, create=False)
    for event, groups in lists.items():
        _strip_ours(groups, adapter.name)
        if not groups:
            del data["hooks"][event]
    if isinstance(data.get("hooks"), dict) and not data["hooks"] and lists:
        del data["hooks"]
    if _same(before, data, adapter):
        return Change(path, before, before)
    record = install_record.read(path)
    if record is not None and record.before is not None and _same(record.before, data, adapter):
        return Change(path, before, record.before, record=record)   # byte for byte
    if not data:   # nothing but preimage's hooks was there: the file goes, as before install
        return Change(path, before, None, record=record)
    return Change(path, before, _dump(data), record=record)


def json_status(adapter: Harness, path: Path) -> str:
    """``installed``, ``not installed``, ``partly installed`` or why the file is unreadable."""
    try:
        before, data = _load(path, adapter.settings_comments)
        lists = _event_lists(path, data, SPECS[adapter.name].events, create=False)
    except UsageError as exc:
        return f"unreadable: {exc}"
    if before is None:
        return "not installed"
    found = [event for event, groups in lists.items()
             if any(isinstance(g, dict) and isinstance(g.get("hooks"), list)
                    and any(isinstance(h, dict) and _is_ours(h.get("command"), adapter.name)
                            for h in g["hooks"]) for g in groups)]
    if not found:
        return "not installed"
    if len(found) == len(SPECS[adapter.name].events):
        commands = {h["command"] for groups in lists.values() for g in groups
                    if isinstance(g, dict) and isinstance(g.get("hooks"), list)
                    for h in g["hooks"] if isinstance(h, dict)
                    and _is_ours(h.get("command"), adapter.name)}
        return _with_options("installed", sorted(commands)[0], adapter.name)
    return f"partly installed ({', '.join(found)} only; run install again)"


def _with_options(state: str, command: str, harness: str) -> str:
    """``installed`` plus the options baked into the hook's command line, and a warning
    when the ``preimage`` it runs cannot be found from here."""
    client, python = split_hook_command(command)
    try:
        words = shlex.split(python)
    except ValueError:
        return state
    at = next((i for i in range(len(words) - 1)
               if words[i] == "hook" and words[i + 1] == harness), None)
    return _describe(state, words[0] if words else "preimage",
                     words[at + 2:] if at is not None else [], client)


def _describe(state: str, exe: str, options: list[str], client: str | None) -> str:
    text = f"{state} ({' '.join(options)})" if options else state
    if shutil.which(exe) is None:
        text += f"; {NOT_FOUND} {exe}"
    return text + "; " + client_status(client)


def client_status(client: str | None) -> str:
    """Which client a hook naming ``client`` (``None``: none) runs now."""
    if client is None:
        return "Python client"
    if os.access(client, os.X_OK):
        return "compiled client"
    return f"Python client (the compiled client {client} is gone; run install again)"


NOT_FOUND = "cannot run:"   # a status saying the hook's preimage is not found from here


# ------------------------------------------------------------------ OpenCode's plugin file
def _plugin_harness(adapter: Harness) -> OpenCode | None:
    """``adapter`` when it is OpenCode or a fork loading the same plugins (Kilo Code CLI)."""
    from preimage.layer.harnesses.opencode import OpenCode

    return adapter if isinstance(adapter, OpenCode) else None


def plan_plugin_install(adapter: OpenCode, path: Path, source: str) -> Change:
    """Write preimage's plugin (refusing to replace a file that is not ours)."""
    before = path.read_text() if path.exists() else None
    if before is not None and adapter.plugin_mark not in before:
        raise UsageError(f"{path} exists and is not preimage's plugin; nothing was changed")
    return Change(path, before, source, installing=True)


def plan_plugin_uninstall(adapter: OpenCode, path: Path) -> Change:
    """Remove preimage's plugin file (and nothing else)."""
    before = path.read_text() if path.exists() else None
    if before is None or adapter.plugin_mark not in before:
        return Change(path, before, before)
    return Change(path, before, None, record=install_record.read(path))


def plugin_status(adapter: OpenCode, path: Path) -> str:
    """Whether ``path`` is preimage's plugin, and the options baked into it."""
    try:
        text = path.read_text()
    except FileNotFoundError:
        return "not installed"
    except OSError as exc:
        return f"unreadable: {exc.strerror}"
    if adapter.plugin_mark not in text:
        return "not installed (another plugin file)"
    found = re.search(r"^const ARGS = (\[.*\])$", text, re.M)
    exe = re.search(r'^const PREIMAGE = process\.env\.PREIMAGE_BIN \|\| "(.*)"$', text, re.M)
    client = re.search(r'^const CLIENT = (".*")$', text, re.M)
    return _describe("installed", exe.group(1) if exe else "preimage",
                     json.loads(found.group(1)) if found else [],
                     (json.loads(client.group(1)) or None) if client else None)


# ------------------------------------------------------------------ per harness
def hook_options(mode: str | None = None, on_failure: str | None = None,
                 approve: bool = False) -> list[str]:
    """The options baked into the hook's command line."""
    options: list[str] = []
    if mode:
        options += ["--mode", mode]
    if on_failure:
        options += ["--on-failure", on_failure]
    if approve:
        options.append("--approve")
    return options


def plan_install(harness: str, scope: Scope, project: Path, *, mode: str | None = None,
                 on_failure: str | None = None, approve: bool = False,
                 client: str | None = None) -> Change:
    """What ``preimage install HARNESS`` would write for ``scope`` (``client``: the
    compiled hook client the hook runs when it is there; user scope only)."""
    adapter = get_harness(harness)
    _check_scope(adapter, scope)
    path = adapter.settings_path(scope, project)
    options = hook_options(mode, on_failure, approve)
    plugin = _plugin_harness(adapter)
    if plugin is not None:
        return plan_plugin_install(plugin, path, plugin.plugin_source(
            preimage_executable(scope), options, on_failure or "ask",
            client=client if scope == "user" else None))
    return plan_json_install(adapter, path, hook_command(adapter.name, scope, options, client))


def plan_uninstall(harness: str, scope: Scope, project: Path) -> Change:
    """What ``preimage uninstall HARNESS`` would change for ``scope``."""
    adapter = get_harness(harness)
    _check_scope(adapter, scope)
    path = adapter.settings_path(scope, project)
    plugin = _plugin_harness(adapter)
    if plugin is not None:
        return plan_plugin_uninstall(plugin, path)
    return plan_json_uninstall(adapter, path)


def status(harness: str, scope: Scope, project: Path) -> str:
    """Whether preimage's hook is installed for ``harness`` in ``scope``."""
    adapter = get_harness(harness)
    path = adapter.settings_path(scope, project)
    plugin = _plugin_harness(adapter)
    if plugin is not None:
        return plugin_status(plugin, path)
    state = json_status(adapter, path)
    if adapter.name == "codex" and state.startswith(("installed", "partly")):
        from preimage.layer.harnesses.codex_trust import TRUST_HINT, trusted

        if not trusted(path):
            state += f"; NOT TRUSTED by Codex — {TRUST_HINT}"
    return state


def _check_scope(adapter: Harness, scope: Scope) -> None:
    if scope not in adapter.scopes():
        raise UsageError(f"{adapter.title} has no {scope} scope; use one of "
                         f"{', '.join(adapter.scopes())}")
