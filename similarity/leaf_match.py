"""How one leaf is matched against another, and how a difference is described: shared
by the whole-way comparison (:mod:`.scoring`) and the item-by-item one (:mod:`.streamed`)."""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from preimage.restoration import IdRemap
from preimage.similarity.report import CLASSES

SERVER_REASON = "server-assigned: no client can set it, so a restore cannot bring it back"
CLASS_WEIGHT = {c: i for i, c in enumerate(CLASSES)}  # content first: the class a missing item shows


def same_value(a: Any, b: Any) -> bool:
    """Equal and of one type: 1 and True, or 1 and 1.0, are different leaves."""
    return type(a) is type(b) and a == b


def jsonable(value: Any) -> Any:
    if isinstance(value, str | int | float | bool) or value is None:
        return value
    if isinstance(value, dict | list) and not value:
        return value
    return str(value)


def remap_note(
    item: tuple[str, str], path: str, original: Any, restored: Any, remaps: Iterable[IdRemap]
) -> str:
    """The restore's own account of a changed server leaf, if it reported one: the
    item's remap of that field, or the remap of the identity the leaf refers to.
    ``item`` is the item's natural key and label; a remap may name either."""
    field = path.rsplit(".", 1)[-1]
    for r in remaps:
        mine = r.key in item
        same_leaf = mine and r.field in (path, field)
        reference = not mine and isinstance(original, str) and len(original) >= 8
        if (same_leaf or reference) and str(r.old) == str(original):
            followed = "" if str(r.new) == str(restored) else f" (live: {restored})"
            whose = "" if same_leaf else f" of {r.key}"
            return f"the restore re-assigned {r.field}{whose} {r.old} → {r.new}{followed}"
    return ""


def difference_reason(got: Any, leaf: Any, fidelity: str) -> str:
    """Why a leaf of the original differs from what the other side has (``got``: its leaf
    at the same path, or ``None``)."""
    if got is None:
        return "missing field"
    if got.fidelity != fidelity:
        return "changed class"
    if type(got.value) is not type(leaf.value) and None not in (got.value, leaf.value):
        return "changed type"
    return "changed value"
