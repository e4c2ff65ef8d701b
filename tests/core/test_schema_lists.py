"""Every list in every snapshot schema is compared the way its order deserves.

A list whose order a server or controller sets, or whose order means nothing, must be
declared keyed or unordered; a list compared by position must be one whose order is the
user's and which a restore keeps. This test holds the audit: a new list field fails it until
someone decides which it is.
"""

from __future__ import annotations

import typing
from typing import Any

import preimage.snapshot_schemas.browser
import preimage.snapshot_schemas.files
import preimage.snapshot_schemas.git
import preimage.snapshot_schemas.imap
import preimage.snapshot_schemas.kubernetes
import preimage.snapshot_schemas.pip
import preimage.snapshot_schemas.postgres
import preimage.snapshot_schemas.sql
import preimage.snapshot_schemas.web  # noqa: F401  (registers every schema)
from preimage.snapshot_schemas import Record, snapshot_types
from preimage.testing import _record_models

#: Lists compared by position, and why their order is the user's and survives a restore.
POSITIONAL = {
    "FileEntry.rdev": "(major, minor): a pair, not a list",
    "FileEntry.extents": "the data regions of a sparse file, in file order",
    "GitReflog.entries": "a reflog is a history: newest first, as git writes it",
    "GitConfigEntry.values": "a multi-valued config key keeps its order (later wins)",
    "PipDistribution.executable": "RECORD order, as the installer wrote it",
    "PipDistribution.record_paths": "RECORD order, as the installer wrote it",
    "PgTable.columns": "column order is the table's (SELECT *, COPY)",
    "PgTable.inherits": "parents in declaration order (it decides column order)",
    "PgTable.row_key": "primary-key column order is the index's",
    "PgTable.copy_columns": "the order of the columns in the rows blob",
    "PgType.labels": "enum labels sort in declaration order",
    "PgObject.definition": "the statements that create the object, run in this order",
    "SqlTable.columns": "column order is the table's",
    "SqlTable.primary_key": "primary-key column order is the index's",
    "SqlTable.copy_columns": "the order of the columns in a tuples rows blob",
}


def _list_fields(model: type[Record]) -> list[str]:
    out = []
    for name, info in model.model_fields.items():
        origin = typing.get_origin(info.annotation)
        args: tuple[Any, ...] = typing.get_args(info.annotation)
        if origin is typing.Union or str(origin) == "<class 'types.UnionType'>":
            origin = next((typing.get_origin(a) for a in args if typing.get_origin(a)), None)
        if origin in (list, tuple):
            out.append(name)
    return out


def test_every_list_field_is_keyed_unordered_or_positional_on_purpose() -> None:
    """Each list field declares its matching, or is in the positional audit with a reason."""
    undecided = []
    seen = set()
    # the built-in schemas only: a connector another test registers (the worked example
    # in docs/) makes its own choices
    builtin = [s for s in snapshot_types().values() if s.__module__.startswith("preimage.")]
    for snapshot in builtin:
        for model in _record_models(snapshot.model_fields["items"].annotation):
            for name in _list_fields(model):
                where = f"{model.__name__}.{name}"
                seen.add(where)
                if not model.field_spec(name).lists and where not in POSITIONAL:
                    undecided.append(where)
    assert undecided == [], f"declare unordered=/keyed_by= or add to POSITIONAL: {undecided}"
    assert set(POSITIONAL) <= seen, "the audit names fields that no longer exist"
