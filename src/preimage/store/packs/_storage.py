"""Where a pack repository keeps its objects: a directory, or an S3 bucket prefix.

A :class:`Storage` holds named, immutable objects (``config``,
``data/ab/<64 hex>``, ``index/<64 hex>``, ``locks/…``): put whole, read whole
or by byte range, listed by prefix, deleted by name.  Nothing else is asked
of it, so any object store or shared filesystem can carry a repository, and
the local default store can keep its packs in a plain directory through
:class:`DirectoryStorage`.

Errors are mapped to the store's own: :class:`ObjectMissing` for an absent
object (internal; callers turn it into a precise error), and for everything
else :class:`~preimage.RemoteUnavailableError` (cannot reach) or
:class:`~preimage.StoreConfigError` (bucket missing, credentials refused).
"""

from __future__ import annotations

import contextlib
import os
import secrets
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Protocol

from preimage.interface.errors import StoreUnavailableError


class ObjectMissing(Exception):
    """The named object does not exist."""

    def __init__(self, name: str) -> None:
        self.name = name
        super().__init__(name)


class Storage(Protocol):
    """Named immutable objects under one location."""

    @property
    def location(self) -> str:
        """Where the objects live, for messages (never holds a credential)."""
        ...

    def put(self, name: str, data: bytes | bytearray, *, exclusive: bool = False) -> bool:
        """Write object ``name`` atomically.  With ``exclusive``, only if it does not
        exist yet: return False (and write nothing) when it does."""
        ...

    def get(self, name: str) -> bytes:
        """The whole object; :class:`ObjectMissing` when absent."""
        ...

    def get_range(self, name: str, start: int, length: int) -> bytes | memoryview:
        """``length`` bytes from offset ``start`` (a view of the client's buffer where it
        has one, copied nowhere); :class:`ObjectMissing` when absent."""
        ...

    def list(self, prefix: str) -> Iterator[tuple[str, int]]:
        """``(name, size)`` of every object whose name starts with ``prefix``."""
        ...

    def delete(self, names: Sequence[str]) -> None:
        """Remove objects; names already gone are fine."""
        ...

    def check(self) -> None:
        """Raise a precise error unless the location exists and can be read and written."""
        ...


class DirectoryStorage:
    """Objects as files under ``root`` (0600 files, 0700 directories).

    Writes go to ``root/tmp`` and are renamed (or, for ``exclusive``, hard-linked)
    into place, so readers never see half an object and of two exclusive
    writers exactly one wins.
    """

    def __init__(self, root: Path) -> None:
        self.root = root
        self._dirs: set[Path] = set()

    @property
    def location(self) -> str:
        return str(self.root)

    def _fail(self, exc: OSError) -> StoreUnavailableError:
        return StoreUnavailableError(str(self.root), exc.strerror or str(exc))

    def _path(self, name: str) -> Path:
        if name.startswith("/") or ".." in name.split("/"):
            raise ValueError(f"bad object name {name!r}")
        return self.root / name

    def put(self, name: str, data: bytes | bytearray, *, exclusive: bool = False) -> bool:
        final = self._path(name)
        try:
            if final.parent not in self._dirs:
                final.parent.mkdir(mode=0o700, parents=True, exist_ok=True)
                self._dirs.add(final.parent)
            (self.root / "tmp").mkdir(mode=0o700, exist_ok=True)
            tmp = self.root / "tmp" / f"{os.getpid()}-{secrets.token_hex(8)}"
            fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
            try:
                view = memoryview(data)
                while view:
                    view = view[os.write(fd, view):]
                os.fsync(fd)
            finally:
                os.close(fd)
            try:
                if exclusive:
                    try:
                        os.link(tmp, final)
                    except FileExistsError:
                        return False
                else:
                    os.replace(tmp, final)
            finally:
                with contextlib.suppress(FileNotFoundError):
                    os.unlink(tmp)
        except OSError as exc:
            raise self._fail(exc) from exc
        return True

    def get(self, name: str) -> bytes:
        try:
            return self._path(name).read_bytes()
        except FileNotFoundError as exc:
            raise ObjectMissing(name) from exc
        except OSError as exc:
            raise self._fail(exc) from exc

    def get_range(self, name: str, start: int, length: int) -> bytes | memoryview:
        try:
            with open(self._path(name), "rb") as fh:
                fh.seek(start)
                return fh.read(length)
        except FileNotFoundError as exc:
            raise ObjectMissing(name) from exc
        except OSError as exc:
            raise self._fail(exc) from exc

    def list(self, prefix: str) -> Iterator[tuple[str, int]]:
        top = prefix.split("/", maxsplit=1)[0]
        base = self.root / top if top else self.root
        if not base.is_dir():
            if base.is_file() and top.startswith(prefix):
                yield top, base.stat().st_size
            return
        for dirpath, _dirs, files in os.walk(base):
            for f in files:
                full = Path(dirpath) / f
                name = full.relative_to(self.root).as_posix()
                if name.startswith(prefix) and not name.startswith("tmp/"):
                    with contextlib.suppress(FileNotFoundError):
                        yield name, full.stat().st_size

    def delete(self, names: Sequence[str]) -> None:
        for name in names:
            try:
                self._path(name).unlink()
            except FileNotFoundError:
                pass
            except OSError as exc:
                raise self._fail(exc) from exc

    def check(self) -> None:
        if not self.root.is_dir():
            from preimage.interface.errors import StoreConfigError

            raise StoreConfigError(
                f"no store directory at {self.root} — create it, or run `preimage store init`",
                where=str(self.root),
            )
        if not os.access(self.root, os.R_OK | os.W_OK | os.X_OK):
            raise StoreUnavailableError(str(self.root), "not readable and writable")
