"""Tier 2 for the harness's own file tools: ``Write``, ``Edit``, ``apply_patch``."""

from __future__ import annotations

import os
import re

from preimage.layer.call import ToolCall
from preimage.layer.context import Context
from preimage.layer.deciding.extract import file_targets, finding, tool_extractor, unknown
from preimage.layer.deciding.rules import Rule
from preimage.layer.decision import Finding, Impact


@tool_extractor("file_tool")
def file_tool(call: ToolCall, rule: Rule, ctx: Context) -> Finding:
    """A tool that writes one file named in its input."""
    key = next((k for k in ("file_path", "notebook_path", "path", "filename")
                if isinstance(call.input.get(k), str)), None)
    if key is None:
        return unknown(call, rule, f"`{call.tool}` names no file")
    path = os.path.normpath(os.path.join(call.cwd, call.input[key]))
    exists = os.path.lexists(path)
    f = finding(call, rule, targets=file_targets([path], ctx, f"{call.tool} writes it",
                                                 include_absent=True),
                outside_workspace=ctx.outside_workspace(path))
    f.impact = (Impact.HIGH if call.tool == "Write" else Impact.NORMAL) if exists else Impact.LOW
    return f


@tool_extractor("apply_patch")
def apply_patch(call: ToolCall, rule: Rule, ctx: Context) -> Finding:
    """Codex's ``apply_patch``: every file the patch adds, updates, moves or deletes."""
    text = call.input.get("input") or call.input.get("patch") or call.command or ""
    names = re.findall(r"^\*\*\* (?:Add|Update|Delete) File: (.+)$|^\*\*\* Move to: (.+)$",
                       str(text), re.M)
    paths = [os.path.normpath(os.path.join(call.workdir, a or b)) for a, b in names]
    if not paths:
        return unknown(call, rule, "the patch names no file")
    deletes = "*** Delete File:" in str(text)
    f = finding(call, rule, targets=file_targets(paths, ctx, "the patch writes it",
                                                 include_absent=True),
                outside_workspace=any(ctx.outside_workspace(p) for p in paths))
    f.impact = Impact.HIGH if deletes else Impact.NORMAL
    return f
