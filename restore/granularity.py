"""How finely a connector's undo reverts a call: the unit it reverts, the fields inside one,
and what it merges inside a field.  Declared in a connector's capabilities
(:class:`preimage.Capabilities`); revert plans follow it."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class Granularity:
    """How finely a connector's undo reverts a call: its unit of state, its fields,
    and what it merges inside one field (``Capabilities.undo``)."""

    item: str                    # "file by path", "row by primary key", …
    fields: str = ""             # "metadata field", "column", "" (whole items only)
    merges: str = ""             # "text files line by line", "flags as sets", …

    def describe(self) -> str:
        """One line: ``file by path, metadata field; text files line by line``."""
        text = self.item + (f", {self.fields}" if self.fields else "")
        return text + (f"; {self.merges}" if self.merges else "")
