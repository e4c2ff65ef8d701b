"""``file://`` target URIs, built here and read by :class:`~preimage.connectors.files.FileConnector`.

::

    file:///abs/path        a file, a directory tree, or a path that does not exist yet
    file:///abs/path?depth=N            only N levels below the path (0: its own entry)
    file:///abs/path?exclude=rel/path   without that path below it (repeatable)

The host is empty (or ``localhost``): file targets are local.
"""

from __future__ import annotations

from preimage.interface.uri import quote_path


def file_uri(path: str) -> str:
    """``file:///abs/path``."""
    return "file://" + quote_path(path)


def scope_query(depth: int | None, left_out: list[str]) -> str:
    """``?depth=N&exclude=…`` of a target's walk limits, in one spelling ("" for none)."""
    from urllib.parse import quote

    query = ([f"depth={depth}"] if depth is not None else []) + [
        f"exclude={quote(rel, safe='/')}" for rel in sorted(left_out)]
    return "?" + "&".join(query) if query else ""


def scoped_uri(path: str, depth: int | None, left_out: list[str]) -> str:
    """``file:///path`` with its ``depth`` and ``exclude`` parameters."""
    return file_uri(path) + scope_query(depth, left_out)
