"""Kilo Code CLI: an OpenCode fork that loads the same JavaScript plugins.

Kilo Code CLI (``kilo``) keeps OpenCode's plugin API — ``tool.execute.before`` may change
``output.args`` or throw to refuse the call (the error's message reaches the model);
``tool.execute.after`` may append to the tool's output — so preimage's plugin is
OpenCode's (:mod:`preimage.layer.harnesses.opencode`), sent to ``preimage hook kilo``.
It loads plugins from ``{plugin,plugins}/*.{js,ts}`` in its global folder
(``$KILO_CONFIG_DIR``, else ``$XDG_CONFIG_HOME/kilo``) and in a project's ``.kilo/``
(and the older ``.kilocode/``).  The tools keep OpenCode's names (``bash``, ``write``,
``edit`` …, MCP tools ``<server>_<tool>``); to a model named ``gpt-…`` it offers
``apply_patch`` (``patchText``) in place of ``edit`` and ``write``.  7.7.7 has no
``multiedit`` and no ``patch`` tool.  In VS Code it may offer notebook tools (its
``native_notebook_tools`` setting): ``notebook_edit`` (``path``, ``action`` insert, replace,
delete or create, ``index``, ``kind``, ``source``, ``expected_revision``, as its schema in
the 7.7.7 binary names them) reads as ``NotebookEdit`` of the notebook at ``path``
(relative to the project, or absolute; Kilo edits the notebook open in VS Code and the
file changes when it is saved), ``notebook_read`` as ``Read``.  ``notebook_execute``
runs a cell in the user's kernel, whose effects nothing names: it stays unknown, so the
layer backs up the workspace (or asks, as configured) — never nothing.

What differs from OpenCode, as observed with the real binary (7.7.7):

* a plugin file that fails to load is skipped without a word, and the calls run — the
  plugin itself refuses a call when ``preimage`` cannot run (``--on-failure allow``
  lets it go ahead, said in the tool's output);
* Kilo can confine its shell commands to the project (its sandbox); the ``rm`` → trash
  rewrite is answered only when nothing says it might (:mod:`.kilo_sandbox`), else the
  paths are copied before the call and the model's note says why;
* on its first start in a config folder it tries to install ``@kilocode/plugin`` there
  in the background (7.7.7 asks for a version the registry does not have, so it fails
  and goes on) and writes a ``.gitignore`` hiding the package files.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from pathlib import Path
from typing import ClassVar

from preimage.layer.call import ToolCall
from preimage.layer.harnesses._base import Scope, home
from preimage.layer.harnesses.opencode import PLUGIN_FILE, TOOLS, OpenCode

#: Kilo's tools beyond OpenCode's (``notebook_execute`` left out on purpose: see above).
KILO_TOOLS = {**TOOLS, "notebook_edit": "NotebookEdit", "notebook_read": "Read"}


class Kilo(OpenCode):
    """Kilo Code's CLI."""

    name = "kilo"
    title = "Kilo Code CLI"
    binary = "kilo"
    plugin_mark: ClassVar[str] = "preimage for Kilo Code CLI"
    tools: ClassVar[dict[str, str]] = KILO_TOOLS

    def rewrite_stopped(self, call: ToolCall, env: Mapping[str, str], pid: int) -> str | None:
        from preimage.layer.harnesses.kilo_sandbox import may_sandbox

        # The call's own environment (the service answers for many): its HOME, its XDG_*.
        why = may_sandbox(call.cwd, env, Path(env.get("HOME") or home()))
        return None if why is None else f"Kilo may run it in its sandbox ({why})"

    def settings_path(self, scope: Scope, project: Path) -> Path:
        if scope == "user":
            from preimage.layer.mcp_servers import kilo_global_folder

            return kilo_global_folder(os.environ, home()) / "plugin" / PLUGIN_FILE
        return project / ".kilo" / "plugin" / PLUGIN_FILE
