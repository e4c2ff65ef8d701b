"""The account a restore gives of itself: per item, and every identity remap."""

from __future__ import annotations

import enum
import itertools
import json
import os
from collections import Counter
from collections.abc import Iterable, Iterator, Sequence
from typing import Any, overload

from pydantic import BaseModel, ConfigDict, Field, GetCoreSchemaHandler
from pydantic_core import core_schema

SPILL_AT = 4096   # results held as objects; past that, in a temporary file
_BLOCK = 1 << 16


class Outcome(enum.StrEnum):
    """What happened to one item."""

    RESTORED = "restored"     # written back (created or changed)
    UNCHANGED = "unchanged"   # live state already matched
    REMOVED = "removed"       # created after the capture and taken away again
    SKIPPED = "skipped"       # deliberately not restored (policy, scope, impossible)
    FAILED = "failed"         # tried and failed; the reason says why
    PLANNED = "planned"       # dry run: would be written


class ItemResult(BaseModel):
    """The outcome for one item, with the action taken or planned."""

    model_config = ConfigDict(frozen=True)

    key: str
    outcome: Outcome
    action: str = ""
    reason: str = ""


class ItemLog(Sequence[ItemResult]):
    """Every item's result, in the order added, with a count per outcome.

    Up to :data:`SPILL_AT` results are held as objects; past that they go, one JSON
    line each, to an unnamed temporary file (unlinked at once, closed with the log)
    and are read back as they are iterated — a restore of a million files would
    otherwise hold a million results (about 0.5 KB each) until it is printed.
    Iterating, the count, indexing and comparing do not depend on where they are.
    """

    def __init__(self, items: Iterable[ItemResult] = ()) -> None:
        self._held: list[ItemResult] = []
        self._fd: int | None = None
        self._written = 0           # bytes in the file
        self._buffer: list[bytes] = []
        self._buffered = 0
        self._counts: Counter[Outcome] = Counter()
        for item in items:
            self.append(item)

    def append(self, item: ItemResult) -> None:
        """Add one result."""
        self.add(item.key, item.outcome, item.action, item.reason, item)

    def add(self, key: str, outcome: Outcome, action: str = "", reason: str = "",
            item: ItemResult | None = None) -> None:
        """Add one result from its fields (past :data:`SPILL_AT` no model is made of it:
        it is written as the line it is read back from)."""
        self._counts[outcome] += 1
        if self._fd is None:
            self._held.append(item or ItemResult(key=key, outcome=outcome, action=action,
                                                 reason=reason))
            if len(self._held) > SPILL_AT:
                self._spill()
            return
        line = json.dumps((key, outcome.value, action, reason)) + "\n"
        self._buffer.append(line.encode())
        self._buffered += len(line)
        if self._buffered >= _BLOCK:
            self._flush()

    def count_of(self, outcome: Outcome) -> int:
        """How many results are ``outcome``."""
        return self._counts[outcome]

    def _spill(self) -> None:
        import tempfile  # only a long report needs it

        fd, name = tempfile.mkstemp(prefix="preimage-report-")
        os.unlink(name)   # gone from the directory: the open descriptor keeps it alive
        self._fd = fd
        held, self._held = self._held, []
        for item in held:
            self._counts[item.outcome] -= 1
            self.append(item)

    def _flush(self) -> None:
        if self._fd is None or not self._buffer:
            return
        data = b"".join(self._buffer)
        self._buffer.clear()
        self._buffered = 0
        view = memoryview(data)
        while view:
            done = os.pwrite(self._fd, view, self._written)
            self._written += done
            view = view[done:]

    def __iter__(self) -> Iterator[ItemResult]:
        if self._fd is None:
            yield from list(self._held)
            return
        for key, outcome, action, reason in self._spilled():
            yield ItemResult(key=key, outcome=Outcome(outcome), action=action, reason=reason)

    def fields(self) -> Iterator[dict[str, str]]:
        """Each result as the dict ``ItemResult.model_dump(mode="json")`` gives, in order,
        made without a model (what ``--json`` prints, a million times over)."""
        if self._fd is None:
            for item in list(self._held):
                yield {"key": item.key, "outcome": item.outcome.value, "action": item.action,
                       "reason": item.reason}
            return
        for key, outcome, action, reason in self._spilled():
            yield {"key": key, "outcome": outcome, "action": action, "reason": reason}

    def _spilled(self) -> Iterator[tuple[str, str, str, str]]:
        assert self._fd is not None
        self._flush()
        end, offset, rest = self._written, 0, b""
        while offset < end:
            block = os.pread(self._fd, min(_BLOCK, end - offset), offset)
            offset += len(block)
            lines = (rest + block).split(b"\n")
            rest = lines.pop()
            for line in lines:
                yield tuple(json.loads(line))  # type: ignore[misc]

    def __len__(self) -> int:
        return sum(self._counts.values())

    @overload
    def __getitem__(self, index: int) -> ItemResult: ...

    @overload
    def __getitem__(self, index: slice) -> list[ItemResult]: ...

    def __getitem__(self, index: int | slice) -> ItemResult | list[ItemResult]:
        if isinstance(index, slice) or self._fd is None:
            return list(self)[index] if self._fd is not None else self._held[index]
        if index < 0:
            index += len(self)
        if not 0 <= index < len(self):
            raise IndexError("item index out of range")
        return next(itertools.islice(self, index, None))

    def __eq__(self, other: object) -> bool:
        if isinstance(other, (ItemLog, list)):
            return len(self) == len(other) and all(a == b for a, b in zip(self, other, strict=True))
        return NotImplemented

    __hash__ = None  # type: ignore[assignment]   # mutable, as a list is

    def __repr__(self) -> str:
        return f"ItemLog({len(self)} items)"

    def __copy__(self) -> ItemLog:
        return ItemLog(self)   # a file of its own: two logs never share (or close) one

    def __deepcopy__(self, memo: dict[int, Any]) -> ItemLog:
        return ItemLog(self)

    def __del__(self) -> None:
        if self._fd is not None:
            os.close(self._fd)
            self._fd = None

    @classmethod
    def __get_pydantic_core_schema__(cls, source: Any,
                                     handler: GetCoreSchemaHandler) -> core_schema.CoreSchema:
        as_list = core_schema.list_schema(handler.generate_schema(ItemResult))
        return core_schema.union_schema(
            [core_schema.is_instance_schema(cls),
             core_schema.no_info_after_validator_function(cls, as_list)],
            serialization=core_schema.plain_serializer_function_ser_schema(
                list, return_schema=as_list),
        )


class IdRemap(BaseModel):
    """A server-assigned identity that changed: follow references with it.

    ``key`` names the item as the report's item results do — its natural key or its
    label (``deployments.apps/shop/web``, ``comment:<name>``) — and ``field`` the
    field that changed, so the meter can explain the difference it makes.
    """

    model_config = ConfigDict(frozen=True)

    key: str
    field: str
    old: Any
    new: Any


class RestoreReport(BaseModel):
    """What a connector did (or, in a dry run, would do) for one snapshot."""

    target: str
    connector: str
    dry_run: bool = False
    items: ItemLog = Field(default_factory=ItemLog)
    remaps: list[IdRemap] = Field(default_factory=list)
    notes: list[str] = Field(default_factory=list)

    def add(self, key: str, outcome: Outcome, action: str = "", reason: str = "") -> None:
        """Record one item's outcome."""
        self.items.add(key, outcome, action, reason)

    def count(self, outcome: Outcome) -> int:
        """How many items ended with ``outcome``."""
        return self.items.count_of(outcome)

    @property
    def changes(self) -> list[ItemResult]:
        """Items that were (or would be) written or removed."""
        return [
            i
            for i in self.items
            if i.outcome in (Outcome.RESTORED, Outcome.REMOVED, Outcome.PLANNED)
        ]

    def count_changes(self) -> int:
        """How many items were (or would be) written or removed: :attr:`changes`, counted."""
        return sum(self.count(o) for o in (Outcome.RESTORED, Outcome.REMOVED, Outcome.PLANNED))

    @property
    def ok(self) -> bool:
        """True when no item failed."""
        return self.count(Outcome.FAILED) == 0
