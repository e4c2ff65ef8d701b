"""Whether Kilo Code CLI may run a shell call inside its sandbox.

Kilo Code CLI can confine the commands its tools run (``bwrap`` and a seccomp filter)
to the project and its own state folders, plus ``sandbox.writable_paths``.  The store
is none of those, so a call rewritten into ``preimage trash …`` (a rename into the
store's trash) would fail there and the ``rm`` — already given its backup ID and no
copy — could not be undone.  The plugin's payload does not say whether the session is
confined, so this reads what Kilo reads:

* its settings: ``sandbox`` (``{"enabled": …}``, or ``true`` in an agent's settings)
  in the global folder (``$KILO_CONFIG_DIR``, else ``$XDG_CONFIG_HOME/kilo``), in
  ``$KILO_CONFIG`` and ``$KILO_CONFIG_CONTENT``, and in every ``kilo.json(c)``,
  ``opencode.json(c)``, ``.kilo/`` and ``.kilocode/`` from the working folder up;
* the per-session choice it keeps in ``$XDG_STATE_HOME/kilo-sandbox-policy/``
  (``{"enabled": true}`` once the user turned the sandbox on).

Sandbox off by default (Kilo's own default), on when any of these may turn it on: a
``sandbox`` entry that is not plainly ``false`` or ``{"enabled": false}``, a file that
cannot be read or parsed (unsure means the copy, never the move).
"""

from __future__ import annotations

import os
from collections.abc import Iterator, Mapping
from pathlib import Path
from typing import Any

from preimage.layer.harnesses import jsonc
from preimage.layer.mcp_servers import KILO_CONFIG_NAMES, KILO_PROJECT_FOLDERS, kilo_global_folder

__all__ = ["may_sandbox"]


def may_sandbox(cwd: str, env: Mapping[str, str], home: Path) -> str | None:
    """Why Kilo may confine the session's shell commands (``None``: it does not)."""
    inline = env.get("KILO_CONFIG_CONTENT")
    if inline:
        reason = _settings_say(inline, "KILO_CONFIG_CONTENT")
        if reason:
            return reason
    for path in _existing_config_files(cwd, env, home):
        try:
            text = path.read_text()
        except (OSError, UnicodeDecodeError) as exc:
            return f"{path} cannot be read ({exc})"
        reason = _settings_say(text, str(path))
        if reason:
            return reason
    state = env.get("XDG_STATE_HOME")
    policies = (Path(state) if state else home / ".local" / "state") / "kilo-sandbox-policy"
    for path in _policy_files(policies):
        try:
            doc = jsonc.loads(path.read_text())
        except (OSError, UnicodeDecodeError, ValueError):
            return f"{path} cannot be read"
        if not isinstance(doc, dict) or doc.get("enabled") is not False:
            return f"{path} turns the sandbox on"
    return None


def _existing_config_files(cwd: str, env: Mapping[str, str], home: Path) -> Iterator[Path]:
    """The settings files of :func:`preimage.layer.mcp_servers.kilo_config_files` that exist,
    found with plain string paths: this runs before every call Kilo makes."""
    folder = str(kilo_global_folder(env, home))
    names = [os.path.join(folder, n) for n in KILO_CONFIG_NAMES]
    if env.get("KILO_CONFIG"):
        names.append(env["KILO_CONFIG"])
    here = os.path.abspath(cwd or ".")
    while True:
        names += [os.path.join(here, n) for n in KILO_CONFIG_NAMES[1:]]
        for sub in KILO_PROJECT_FOLDERS:
            inner = os.path.join(here, sub)
            if os.path.isdir(inner):
                names += [os.path.join(inner, n) for n in KILO_CONFIG_NAMES[1:]]
        parent = os.path.dirname(here)
        if parent == here:
            break
        here = parent
    for name in names:
        if os.path.lexists(name):
            yield Path(name)


def _settings_say(text: str, where: str) -> str | None:
    if "sandbox" not in text:   # most files: no parse needed
        return None
    try:
        doc = jsonc.loads(text) if text.strip() else {}
    except ValueError:
        return f"{where} cannot be parsed"
    for value in _sandbox_entries(doc):
        if value is False or (isinstance(value, dict) and value.get("enabled") is False):
            continue
        return f"{where} sets sandbox: {value!r}"
    return None


def _sandbox_entries(doc: Any) -> Iterator[Any]:
    """Every value of a ``sandbox`` key, at any depth (top level, an agent's settings)."""
    if isinstance(doc, dict):
        for key, value in doc.items():
            if key == "sandbox":
                yield value
            else:
                yield from _sandbox_entries(value)
    elif isinstance(doc, list):
        for item in doc:
            yield from _sandbox_entries(item)


def _policy_files(root: Path) -> Iterator[Path]:
    try:
        folders = list(os.scandir(root))
    except OSError:
        return
    for folder in folders:
        if not folder.is_dir(follow_symlinks=False):
            continue
        try:
            entries = list(os.scandir(folder.path))
        except OSError:
            continue
        for entry in entries:
            if entry.name.endswith(".json"):
                yield Path(entry.path)
