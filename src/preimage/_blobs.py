"""Content-addressed blob store: sha256-named, deduplicated, zstd-compressed.

A blob's name is the sha256 of its *uncompressed* bytes; it lives at
``blobs/<2 hex>/<64 hex>.zst``.  Writes go to a temp file in the same
filesystem and are renamed into place, so a reader never sees half a blob and
two processes writing the same blob both succeed.  Every read is verified:
the decompressed bytes must hash to the name, else :class:`BlobCorruptError`.
"""

from __future__ import annotations

import contextlib
import hashlib
import io
import itertools
import os
import secrets
import tempfile
from collections.abc import Iterable, Iterator
from pathlib import Path
from typing import IO, BinaryIO, Protocol

import zstandard

from preimage._errors import BlobCorruptError, BlobMissingError, StoreUnavailableError

CHUNK = 1 << 20
_LEVEL = 3


class DigestCache(Protocol):
    """Remembers a file's digest by inode and stat."""

    def cached_digest(
        self, dev: int, ino: int, size: int, mtime_ns: int, ctime_ns: int
    ) -> str | None: ...

    def cache_digests(self, rows: list[tuple[int, int, int, int, int, str]]) -> None: ...


def _private_dir(path: Path) -> None:
    path.mkdir(mode=0o700, parents=True, exist_ok=True)


class BlobStore:
    """Blobs under ``root``.  ``fallback`` is read when a blob is not here
    (a scratch store layered over the real one for scoring live state)."""

    def __init__(self, root: Path, fallback: BlobStore | None = None) -> None:
        self.root = root
        self.fallback = fallback
        self.bytes_written = 0   # compressed bytes of blobs new to this store
        self.bytes_seen = 0      # uncompressed bytes handed to put_*
        self.blobs_written = 0
        self._dirs: set[str] = set()
        # Optional digest cache by inode and stat (the catalog), so that an
        # unchanged file is not read again on the next capture.
        self.digest_cache: DigestCache | None = fallback.digest_cache if fallback else None
        try:
            _private_dir(root / "tmp")
        except OSError as exc:
            raise StoreUnavailableError(str(root), exc.strerror or str(exc)) from exc

    # ------------------------------------------------------------ paths
    def path(self, digest: str) -> Path:
        """Where blob ``digest`` lives (whether or not it exists)."""
        return self.root / digest[:2] / f"{digest}.zst"

    def exists(self, digest: str) -> bool:
        """Whether the blob is present here or in the fallback."""
        if self.path(digest).exists():
            return True
        return self.fallback.exists(digest) if self.fallback else False

    # ------------------------------------------------------------ writing
    def put_bytes(self, data: bytes) -> str:
        """Store ``data``; return its digest (small blobs skip the streaming path)."""
        digest = hashlib.sha256(data).hexdigest()
        self.bytes_seen += len(data)
        final = self.path(digest)
        if final.exists():
            return digest
        packed = zstandard.ZstdCompressor(level=_LEVEL).compress(data)
        parent = final.parent
        try:
            if parent.name not in self._dirs:
                _private_dir(parent)
                self._dirs.add(parent.name)
            tmp = self.root / "tmp" / f"blob-{os.getpid()}-{secrets.token_hex(8)}"
            fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
            try:
                os.write(fd, packed)
            finally:
                os.close(fd)
            os.replace(tmp, final)
        except OSError as exc:
            raise StoreUnavailableError(str(self.root), exc.strerror or str(exc)) from exc
        self.bytes_written += len(packed)
        self.blobs_written += 1
        return digest

    def put_file(self, fileobj: BinaryIO) -> str:
        """Store everything readable from ``fileobj``, streaming when it is large."""
        head = fileobj.read(CHUNK)
        if len(head) < CHUNK:
            return self.put_bytes(head)
        return self.put_chunks(itertools.chain([head], iter(lambda: fileobj.read(CHUNK), b"")))

    def put_chunks(self, chunks: Iterable[bytes]) -> str:
        """Store the concatenation of ``chunks`` without holding it in memory."""
        hasher = hashlib.sha256()
        tmp = self._tempfile()
        try:
            with tmp:
                cctx = zstandard.ZstdCompressor(level=_LEVEL)
                with cctx.stream_writer(tmp, closefd=False) as writer:
                    for chunk in chunks:
                        hasher.update(chunk)
                        self.bytes_seen += len(chunk)
                        writer.write(chunk)
            digest = hasher.hexdigest()
            final = self.path(digest)
            if final.exists():
                return digest
            _private_dir(final.parent)
            size = os.path.getsize(tmp.name)
            os.replace(tmp.name, final)
            self.bytes_written += size
            self.blobs_written += 1
            return digest
        except OSError as exc:
            raise StoreUnavailableError(str(self.root), exc.strerror or str(exc)) from exc
        finally:
            with contextlib.suppress(FileNotFoundError):
                os.unlink(tmp.name)

    def _tempfile(self) -> IO[bytes]:
        try:
            return tempfile.NamedTemporaryFile(
                dir=self.root / "tmp", prefix="blob-", delete=False
            )
        except OSError as exc:
            raise StoreUnavailableError(str(self.root), exc.strerror or str(exc)) from exc

    # ------------------------------------------------------------ reading
    def chunks(
        self, digest: str, *, backup_id: str | None = None, path: str | None = None
    ) -> Iterator[bytes]:
        """Yield the blob's bytes; raise at the end if they do not hash to ``digest``.

        Callers that write the chunks somewhere must treat an exception as
        "discard what you wrote".
        """
        source = self.path(digest)
        if not source.exists():
            if self.fallback is not None:
                yield from self.fallback.chunks(digest, backup_id=backup_id, path=path)
                return
            raise BlobMissingError(digest, backup_id=backup_id, path=path)
        hasher = hashlib.sha256()
        try:
            with open(source, "rb") as fh:
                reader = zstandard.ZstdDecompressor().stream_reader(fh)
                while chunk := reader.read(CHUNK):
                    hasher.update(chunk)
                    yield chunk
        except zstandard.ZstdError as exc:
            raise BlobCorruptError(digest, backup_id=backup_id, path=path) from exc
        if hasher.hexdigest() != digest:
            raise BlobCorruptError(digest, backup_id=backup_id, path=path)

    def get_bytes(
        self, digest: str, *, backup_id: str | None = None, path: str | None = None
    ) -> bytes:
        """The whole blob, verified."""
        buf = io.BytesIO()
        for chunk in self.chunks(digest, backup_id=backup_id, path=path):
            buf.write(chunk)
        return buf.getvalue()

    def verify(self, digest: str, *, backup_id: str | None = None, path: str | None = None) -> None:
        """Raise :class:`BlobMissingError` / :class:`BlobCorruptError` unless the blob is sound."""
        for _ in self.chunks(digest, backup_id=backup_id, path=path):
            pass

    def stored_size(self, digest: str) -> int:
        """Compressed size on disk (0 when only in the fallback or missing)."""
        try:
            return self.path(digest).stat().st_size
        except FileNotFoundError:
            return 0
