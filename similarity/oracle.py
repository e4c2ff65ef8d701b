"""The outside oracle in the meter: the server's own dump of the schema, before and now.

A snapshot that carries a :class:`~preimage.snapshot_schemas.oracle.SchemaOracle` (its
connector ran the server's dump tool during the capture) is compared line by line with
the live state's, dumped the same way: every normalized line the original has and the
live schema lacks is an original leaf nothing matched, every line only the live schema
has is an extra leaf — both of class ``metadata``, listed as ``uncaptured (oracle)`` with
the line itself.  Lines are compared as a multiset (their order is the tool's, not the
state's).  So a kind the connector does not read, or does not bring back, lowers
``restorable`` below 1.0 and is named, however the connector's own fields compare.

A line the snapshot's own fields already account for is not counted a second time, where
that is decidable (:func:`split_accounted`): a ``COMMENT ON … IS '…';`` or ``… OWNER TO
…;`` line of an object whose ``comment`` or ``owner`` field the connector's comparison
already lists as differing, with the same value on the same side (the backup's value for a
line only the backup's dump has, the live value for a line only the live dump has).  Each
such field difference accounts for one line at most.  Every other line — anything the
rule cannot tie to a field difference — is still counted: the rule errs toward naming.

When either side has no dump (the tool is missing or failed), or the two were made by
different versions of the tool, nothing is counted and the report says the oracle did
not run, and why.
"""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any

from preimage.snapshot_schemas import Fidelity
from preimage.snapshot_schemas.oracle import SchemaOracle

REASON = "uncaptured (oracle)"
PATH = "(oracle)"
FIDELITY = Fidelity.METADATA.value


@dataclass
class OracleOutcome:
    """What the comparison found: a note for the report, and the differing lines
    (``entry<TAB>statement line``, as :func:`~preimage.connectors.postgres.oracle.normalize`
    writes them)."""

    note: str
    missing: list[str] = field(default_factory=list)  # in the original, not live
    extra: list[str] = field(default_factory=list)    # live, not in the original
    ran: bool = False


def _lines(record: SchemaOracle, blobs: Any) -> list[str]:
    assert record.digest is not None
    return b"".join(blobs.chunks(record.digest)).decode("utf-8").splitlines()


def compare_oracles(original: SchemaOracle, live: SchemaOracle | None, blobs: Any) -> OracleOutcome:
    """Compare the original's dump with the live one's (``blobs`` holds both)."""
    if not original.ran or original.digest is None:
        return OracleOutcome(f"schema oracle did not run at capture: {original.reason}")
    if live is None:
        return OracleOutcome("schema oracle did not run: the live state has no schema dump")
    if not live.ran or live.digest is None:
        return OracleOutcome(f"schema oracle did not run on the live state: {live.reason}")
    if live.tool != original.tool:
        return OracleOutcome(f"schema oracle not compared: captured with {original.tool}, "
                             f"the live state read with {live.tool}")
    if live.digest == original.digest:
        return OracleOutcome(f"{original.tool}: schema identical ({original.lines} lines)",
                             ran=True)
    if blobs is None:  # the texts cannot be read: one difference, unnamed
        return OracleOutcome(f"{original.tool}: the schema differs (no store to read the "
                             "dumps from)", [f"(schema)\tdump {original.digest[:12]}"],
                             [f"(schema)\tdump {live.digest[:12]}"], ran=True)
    before = Counter(_lines(original, blobs))
    after = Counter(_lines(live, blobs))
    missing = sorted((before - after).elements())
    extra = sorted((after - before).elements())
    return OracleOutcome(
        f"{original.tool}: {len(missing)} schema line(s) not brought back, "
        f"{len(extra)} not in the backup", missing, extra, ran=True)


def describe_line(line: str) -> tuple[str, str]:
    """``(entry, statement line)`` of a normalized line."""
    entry, _, text = line.partition("\t")
    return entry, text


# (schema, object, field, value, side): side 0 = the backup's value, 2 = the live value.
_Key = tuple[str, str, str, str, int]
_NAME = r"[a-z_][a-z0-9_$]*"  # a name pg_dump prints without quotes
_COMMENT = re.compile(r"^COMMENT ON (?:.*) IS '((?:[^']|'')*)';$")
_OWNER = re.compile(rf"^ALTER .* OWNER TO ({_NAME});$")
_COMMENT_ENTRY = re.compile(rf"^COMMENT ({_NAME})\.([A-Z ]+) ({_NAME})(?:\.{_NAME})?$")
_OBJECT_ENTRY = re.compile(rf"^[A-Z ]+ ({_NAME})\.({_NAME})$")
_ITEM = re.compile(rf"^[a-z ]+ ({_NAME})/({_NAME})$")


def _line_key(line: str, side: int) -> _Key | None:
    """What field difference would account for ``line`` (``None``: none decidably)."""
    entry, text = describe_line(line)
    comment = _COMMENT.match(text)
    if comment:
        where = _COMMENT_ENTRY.match(entry)
        if where:
            return (where.group(1), where.group(3), "comment",
                    comment.group(1).replace("''", "'"), side)
        return None
    owner = _OWNER.match(text)
    where = _OBJECT_ENTRY.match(entry)
    if owner and where:
        return (where.group(1), where.group(2), "owner", owner.group(1), side)
    return None


def _field_keys(differences: Iterable[Any]) -> Counter[_Key]:
    """The connector's own ``comment``/``owner`` differences, as :data:`_Key` values."""
    keys: Counter[_Key] = Counter()
    for d in differences:
        item = _ITEM.match(d.item)
        name = d.path.rsplit(".", 1)[-1]
        if item is None or name not in ("comment", "owner"):
            continue
        for value, side in ((d.original, 0), (d.restored, 2)):
            if isinstance(value, str):
                keys[(item.group(1), item.group(2), name, value, side)] += 1
    return keys


def split_accounted(outcome: OracleOutcome, differences: Iterable[Any]) -> int:
    """Take out of ``outcome`` the lines the connector's field ``differences`` account for
    (see the module docstring); how many were taken."""
    available = _field_keys(differences)
    taken = 0
    for lines, side in ((outcome.missing, 0), (outcome.extra, 2)):
        kept = []
        for line in lines:
            key = _line_key(line, side)
            if key is not None and available[key] > 0:
                available[key] -= 1
                taken += 1
            else:
                kept.append(line)
        lines[:] = kept
    return taken
