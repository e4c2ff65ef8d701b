"""What a file capture must also hold so that a restore undoes a call's side effects.

A command that creates, removes or renames an entry also changes the
directory holding it (its mtime and ctime), may create the directories on
the way (``mkdir -p a/b/c``), and one that replaces a file that shares its
inode with other paths splits the hardlink group.  For every ``file://``
target the layer plans, this module adds:

* the **parent directory's own entry** (``?depth=0``: times, mode, owner,
  xattrs — no children), restored after the paths inside it;
* for a path that does not exist yet, the **topmost missing ancestor**
  instead of the path, so a restore removes every directory the call made;
* for a regular file with other hardlinks, **the whole group in one
  target**: the nearest directory holding every link found, walked just
  deep enough to reach them (``?depth=N``), so the restore links them again
  instead of writing separate copies.  Links are looked for beside the file
  and then in the workspace (a bounded walk); links not found are said.

A program the layer does not model gets the workspace snapshot and, by
:func:`home_state_targets`, the places programs keep their own state in the
user's home — the home's own entries and dotfiles, ``~/.config`` two levels
deep, ``~/.local/share``, ``~/.local/state`` and ``~/.cache`` one level
deep — so a restore removes the configuration directory a tool created on
its first run and puts back the dotfile it rewrote.  Deeper files there are
not held; the audit reports them when a program changes one.
"""

from __future__ import annotations

import os
import stat
from collections.abc import Iterator
from urllib.parse import unquote, urlsplit

from preimage.connectors.files.address import file_uri, scoped_uri
from preimage.layer.context import Context
from preimage.layer.deciding.extract import regenerable
from preimage.layer.decision import PlannedTarget

_LINK_SEARCH_LIMIT = 20_000   # entries walked in the workspace looking for hardlinks
_WORKSPACE_WHY = "workspace snapshot"


def file_path(t: PlannedTarget) -> tuple[str, int | None] | None:
    """``(path, depth)`` of a ``file://`` target (``None`` for other schemes)."""
    if t.scheme != "file":
        return None
    parts = urlsplit(t.uri)
    depth = None
    for kv in parts.query.split("&"):
        if kv.startswith("depth=") and kv[6:].isdigit():
            depth = int(kv[6:])
    return os.path.normpath(unquote(parts.path)) or "/", depth


def depth_uri(path: str, depth: int) -> str:
    """``file:///path?depth=N``."""
    return scoped_uri(path, depth, [])


_HOME_STATE = ((".", 1), (".config", 2), (".local/share", 1), (".local/state", 1), (".cache", 1))


def home_state_targets(ctx: Context) -> list[PlannedTarget]:
    """Depth-limited targets of the home's state for a call the layer cannot read."""
    home = os.path.normpath(ctx.home) if ctx.home else ""
    if not home or home == "/" or not os.path.isdir(home):
        return []
    out = []
    for rel, depth in _HOME_STATE:
        path = os.path.normpath(os.path.join(home, rel))
        if rel == "." or os.path.isdir(path):
            out.append(PlannedTarget(depth_uri(path, depth),
                                     "a program the layer cannot read may keep state here",
                                     regenerable=rel == ".cache"))
    return out


def cover_side_effects(targets: list[PlannedTarget], ctx: Context,
                       notes: list[str]) -> list[PlannedTarget]:
    """``targets`` widened to hold the side effects described in the module docstring."""
    out: list[PlannedTarget] = []
    parents: list[PlannedTarget] = []
    for t in targets:
        got = file_path(t)
        if got is None or t.why == _WORKSPACE_WHY or (
                got[1] is not None and os.path.lexists(got[0])):
            out.append(t)
            continue
        if got[1] is not None:  # a depth-limited scope not made yet: nothing in it to limit
            t = PlannedTarget(file_uri(got[0]), t.why, t.fallback, t.regenerable, t.external)
        path = got[0]
        path = _topmost_missing(path)
        if path != got[0]:
            t = PlannedTarget(file_uri(path), t.why + " (with the directories it creates)",
                              t.fallback, t.regenerable, t.external)
        group = _hardlink_group(path, ctx, notes)
        if group is not None:  # the group's directory holds the file's entry and its times
            out.append(group)
            continue
        out.append(t)
        parent = os.path.dirname(path)
        if parent != path:
            parents.append(PlannedTarget(depth_uri(parent, 0),
                                         "its entries change (times of the directory)",
                                         regenerable=regenerable(parent)))
    return out + parents


def _topmost_missing(path: str) -> str:
    """``path`` when it exists, else its highest ancestor that does not exist."""
    top = path
    cur = path
    while not os.path.lexists(cur):
        top = cur
        parent = os.path.dirname(cur)
        if parent == cur:
            break
        cur = parent
    return top


def _hardlink_group(path: str, ctx: Context, notes: list[str]) -> PlannedTarget | None:
    """One target holding every hardlink of ``path`` found, or ``None`` when it has none."""
    try:
        st = os.lstat(path)
    except OSError:
        return None
    if not stat.S_ISREG(st.st_mode) or st.st_nlink < 2:
        return None
    ident = (st.st_dev, st.st_ino)
    links = {path}
    for candidate in _link_candidates(path, ctx):
        try:
            cst = os.lstat(candidate)
        except OSError:
            continue
        if (cst.st_dev, cst.st_ino) == ident:
            links.add(candidate)
            if len(links) == st.st_nlink:
                break
    if len(links) < st.st_nlink:
        notes.append(f"{path} has {st.st_nlink} hardlinks; {st.st_nlink - len(links)} are "
                     "outside the directories searched, and a restore writes it apart from them")
    if len(links) == 1:
        return None
    common = os.path.commonpath(sorted(links))
    if common in ("/", ctx.home.rstrip("/")):
        notes.append(f"the hardlinks of {path} span {common}; they are captured separately")
        return None
    depth = max(p[len(common):].count("/") for p in links)
    return PlannedTarget(depth_uri(common, depth),
                         f"the hardlink group of {os.path.basename(path)} ({len(links)} links)",
                         regenerable=regenerable(common))


def _link_candidates(path: str, ctx: Context) -> Iterator[str]:
    """Paths beside ``path``, then in the workspace (bounded; ``.git/objects`` skipped)."""
    here = os.path.dirname(path)
    try:
        with os.scandir(here) as it:
            for e in it:
                yield e.path
    except OSError:
        pass
    ws = ctx.workspace
    if not ws or ws == "/" or ws == ctx.home.rstrip("/") or not os.path.isdir(ws):
        return
    seen = 0
    for dirpath, dirnames, filenames in os.walk(ws):
        dirnames[:] = [d for d in dirnames
                       if not (d == "objects" and dirpath.endswith("/.git"))]
        if dirpath == here:
            continue
        for name in filenames:
            seen += 1
            if seen > _LINK_SEARCH_LIMIT:
                return
            yield os.path.join(dirpath, name)
