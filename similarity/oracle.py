"""The outside oracle in the meter: the server's own dump of the schema, before and now.

A snapshot that carries a :class:`~preimage.snapshot_schemas.oracle.SchemaOracle` (its
connector ran the server's dump tool during the capture) is compared line by line with
the live state's, dumped the same way: every normalized line the original has and the
live schema lacks is an original leaf nothing matched, every line only the live schema
has is an extra leaf — both of class ``metadata``, listed as ``uncaptured (oracle)`` with
the line itself.  Lines are compared as a multiset (their order is the tool's, not the
state's).  So a kind the connector does not read, or does not bring back, lowers
``restorable`` below 1.0 and is named, however the connector's own fields compare.

When either side has no dump (the tool is missing or failed), or the two were made by
different versions of the tool, nothing is counted and the report says the oracle did
not run, and why.
"""

from __future__ import annotations

from collections import Counter
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
