"""Snapshot schema of the ``pip`` connector (v1).

One :class:`PipDistribution` per installed distribution (``*.dist-info`` in
the environment's ``purelib``/``platlib``), keyed by its normalised name, and
one :class:`PipInterpreter` for the interpreter the environment runs on.
What is kept, by class:

* content  — version, where it is installed, and every installed file with
  the sha256 of its bytes (the RECORD's own format, ``sha256=<urlsafe b64>``),
  which is also the name of the blob holding those bytes: the installed files
  are the material a wheel is built from at restore time;
* metadata — the installer-written facts a client can set again: ``INSTALLER``,
  ``REQUESTED``, ``direct_url.json`` (PEP 610: editable, VCS and local-path
  installs), and which files are executable.

Left out: bytecode caches (``__pycache__/*.pyc``), which the interpreter and
the installer regenerate (their bytes embed timestamps), and the RECORD file
itself, which lists no hash of its own and is rewritten after a restore.
"""

from __future__ import annotations

from typing import Annotated, ClassVar, Literal

from pydantic import Field

from preimage.snapshot_schemas._base import (
    Item,
    Snapshot,
    content,
    key,
    metadata,
    register_snapshot_type,
)


class PipInterpreter(Item):
    """The interpreter of the environment: a restore needs the same one."""

    kind: Literal["python"] = key("python")
    implementation: str = content(description="cpython, pypy, …")
    version: str = content(description="major.minor.micro")


class PipDistribution(Item):
    """One installed distribution, as ``pip inspect`` sees it, with its files."""

    kind: Literal["dist"] = key("dist")
    name: str = key(description="normalised (PEP 503) project name")
    display_name: str = content(description="the Name: of its METADATA")
    version: str = content()
    location: str = content(description="'purelib' or 'platlib'")
    dist_info: str = content(description="name of its .dist-info directory")
    files: dict[str, str] = content(
        description="RECORD path → 'sha256=<urlsafe b64>' of the installed bytes (no bytecode)"
    )
    installer: str | None = metadata(None, description="content of INSTALLER")
    requested: bool = metadata(False, description="REQUESTED present: installed by request")
    direct_url: str | None = metadata(None, description="content of direct_url.json (PEP 610)")
    executable: list[str] = metadata(
        default_factory=list, description="RECORD paths with an executable bit"
    )
    record_paths: list[str] = content(
        default_factory=list, description="every RECORD path in order, bytecode included"
    )


PipItem = Annotated[PipInterpreter | PipDistribution, Field(discriminator="kind")]


@register_snapshot_type
class PipSnapshot(Snapshot):
    """The package set of one Python environment."""

    schema_name: ClassVar[str] = "pip"
    schema_version: int = 1
    connector: str = "pip"
    interpreter: str = Field(description="the environment's python, as the target names it")
    prefix: str = Field(description="sys.prefix of the environment")
    paths: dict[str, str] = Field(
        description="install scheme: purelib, platlib, scripts, data, include"
    )
    items: list[PipItem] = Field(default_factory=list)
