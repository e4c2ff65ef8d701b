"""The pack repository on a directory: no servers, the format and the delete protocol."""

from __future__ import annotations

import io
import os
import secrets
from pathlib import Path

import pytest

from preimage import BlobCorruptError, BlobMissingError, StoreConfigError, WrongKeyError
from preimage.store.packs import (
    DirectoryStorage,
    Keys,
    PackBlobStore,
    PackRepository,
    init_repository,
    new_key_text,
)
from preimage.store.packs._blobstore import MemoryCoordinator


def _open(root: Path, key: str | None, coord: MemoryCoordinator | None = None,
          cache: str = "cache") -> PackBlobStore:
    repo = PackRepository.open(DirectoryStorage(root / "repo"), key, root / cache)
    return PackBlobStore(repo, coordinator=coord)


@pytest.fixture
def repo_dir(tmp_path: Path) -> tuple[Path, str]:
    (tmp_path / "repo").mkdir()
    key = new_key_text()
    init_repository(DirectoryStorage(tmp_path / "repo"), Keys, key, secrets.token_hex(16))
    return tmp_path, key


def test_round_trip_and_a_scattered_change_stores_little(tmp_path: Path) -> None:
    """Blobs come back byte for byte from a second process's view; rewriting 20 spots of a
    20 MiB file stores a fraction of it (fixed key, repository id and bytes: the chunk
    boundaries, and so the outcome, are the same on every run)."""
    import random

    root, key = tmp_path, "k" * 43
    (root / "repo").mkdir()
    init_repository(DirectoryStorage(root / "repo"), Keys, key, "ab" * 16)
    rng = random.Random(20)
    blobs = _open(root, key)
    small = blobs.put_bytes(b"hello")
    data = bytearray(rng.randbytes(20 << 20))
    big = blobs.put_file(io.BytesIO(bytes(data)))
    blobs.flush()
    first = blobs.bytes_written
    for i in range(0, len(data), len(data) // 20):
        data[i : i + 100] = rng.randbytes(100)
    changed = blobs.put_file(io.BytesIO(bytes(data)))
    blobs.flush()
    assert blobs.bytes_written - first < first // 2
    blobs.close()
    other = _open(root, key, cache="cache2")
    assert other.get_bytes(small) == b"hello"
    assert other.get_bytes(changed) == bytes(data)
    assert other.raw_size(big) == 20 << 20


def test_nothing_readable_at_rest(repo_dir: tuple[Path, str]) -> None:
    """Neither the content nor its digest appears in any object."""
    root, key = repo_dir
    blobs = _open(root, key)
    secret_text = b"the quarterly numbers are " + os.urandom(8).hex().encode()
    digest = blobs.put_bytes(secret_text * 50)
    blobs.flush()
    for path in (root / "repo").rglob("*"):
        if path.is_file():
            body = path.read_bytes()
            assert b"quarterly" not in body and digest.encode() not in body


def test_wrong_key_and_missing_key_are_clear(repo_dir: tuple[Path, str]) -> None:
    """Another key, or none, is refused before anything is read."""
    root, _key = repo_dir
    with pytest.raises(WrongKeyError):
        _open(root, new_key_text())
    with pytest.raises(StoreConfigError, match="is encrypted"):
        _open(root, None)


def test_damaged_and_missing_packs(repo_dir: tuple[Path, str]) -> None:
    """A flipped byte in a pack reads as corrupt, a deleted pack as missing."""
    root, key = repo_dir
    blobs = _open(root, key)
    digest = blobs.put_bytes(os.urandom(200 << 10))
    blobs.flush()
    pack = next(p for p in (root / "repo" / "data").rglob("*") if p.is_file())
    raw = bytearray(pack.read_bytes())
    raw[100] ^= 1
    pack.write_bytes(bytes(raw))
    with pytest.raises(BlobCorruptError):
        _open(root, key, cache="c1").get_bytes(digest)
    pack.unlink()
    with pytest.raises(BlobMissingError):
        _open(root, key, cache="c2").get_bytes(digest)


def test_unencrypted_repository_for_a_local_directory(tmp_path: Path) -> None:
    """cipher none: the same packs, plain boxes, chunks named by SHA-256."""
    (tmp_path / "repo").mkdir()
    config, created = init_repository(DirectoryStorage(tmp_path / "repo"), Keys, None,
                                      secrets.token_hex(16))
    assert created and config.cipher == "none"
    blobs = _open(tmp_path, None)
    digest = blobs.put_bytes(b"plain " * 1000)
    blobs.flush()
    assert _open(tmp_path, None, cache="c2").get_bytes(digest) == b"plain " * 1000


def test_purge_keeps_a_blob_brought_back_and_drops_the_rest(repo_dir: tuple[Path, str]) -> None:
    """Two-phase delete: a hidden blob a capture asks for is brought back and survives the
    purge; the other is deleted, its pack rewritten around the survivors."""
    root, key = repo_dir
    coord = MemoryCoordinator()
    blobs = _open(root, key, coord)
    keep = os.urandom(300 << 10)
    doomed = os.urandom(300 << 10)
    live = os.urandom(300 << 10)
    d_keep, d_doomed, d_live = (blobs.put_bytes(x) for x in (keep, doomed, live))
    blobs.flush()
    assert blobs.hide(d_keep, "g1") and blobs.hide(d_doomed, "g1")
    capture = _open(root, key, coord, cache="capture")
    capture.begin_capture()
    assert capture.exists(d_keep)          # brought back, atomically
    freed = blobs.purge_hidden("g1", [d_keep, d_doomed])
    assert freed > 0
    after = _open(root, key, coord, cache="after")
    assert after.get_bytes(d_keep) == keep and after.get_bytes(d_live) == live
    with pytest.raises(BlobMissingError):
        after.get_bytes(d_doomed)


def test_a_capture_after_the_claim_writes_the_blob_anew(repo_dir: tuple[Path, str]) -> None:
    """A capture that saw a blob hidden and asks for it after a purge claimed it writes
    it again; the purge, which noted its packs before claiming, never deletes the new copy."""
    root, key = repo_dir
    coord = MemoryCoordinator()
    blobs = _open(root, key, coord)
    body = os.urandom(400 << 10)
    digest = blobs.put_bytes(body)
    blobs.flush()
    blobs.hide(digest, "g1")
    capture = _open(root, key, coord, cache="capture")
    capture.begin_capture()
    claim = coord.claim_hidden

    def claim_then_capture(generation: str, digests: object) -> set[str]:
        got = claim(generation, digests)  # type: ignore[arg-type]
        assert not capture.exists(digest)          # too late to bring it back
        assert capture.put_bytes(body) == digest   # so it is written anew
        capture.flush()
        return got

    coord.claim_hidden = claim_then_capture  # type: ignore[method-assign]
    blobs.purge_hidden("g1", [digest])
    assert _open(root, key, coord, cache="after").get_bytes(digest) == body


def test_orphan_packs_of_a_dead_writer_are_leftovers(repo_dir: tuple[Path, str]) -> None:
    """Packs no index names are leftovers once their writer's lease is free."""
    root, key = repo_dir
    blobs = _open(root, key)
    blobs.repo.config = blobs.repo.config.__class__(**{**blobs.repo.config.__dict__,
                                                       "pack_size": 1 << 20})
    for _ in range(3):
        blobs.put_bytes(os.urandom(600 << 10))
    # never flushed: the sealed packs are uploaded, no index names them
    blobs.repo._throttle()
    for f in blobs.repo._uploads:
        f.result()
    left = blobs.leftovers()
    assert left and all(x.name.startswith("data/") for x in left)
    freed = blobs.remove_leftovers([x.name for x in left])
    assert freed == sum(x.size for x in left)
    assert not [p for p in (root / "repo" / "data").rglob("*") if p.is_file()]


def test_verify_many_reads_each_box_once_and_the_write_pass_reads_the_spool(
        repo_dir: tuple[Path, str]) -> None:
    """A restore's verification of many blobs fetches each pack range once (small blobs
    share ranged GETs); reading them afterwards fetches nothing; closing removes the spool."""
    root, key = repo_dir
    writer = _open(root, key)
    bodies = [os.urandom(n) for n in [3000] * 40 + [300 << 10] * 5 + [3 << 20]]
    digests = [writer.put_bytes(b) for b in bodies]
    writer.flush()
    reader = _open(root, key, cache="other")
    storage = reader.repo.storage
    fetched: list[int] = []
    get_range = storage.get_range

    def counting(name: str, start: int, length: int) -> bytes:
        fetched.append(length)
        return get_range(name, start, length)

    storage.get_range = counting  # type: ignore[method-assign]
    reader.verify_many(reversed(digests))
    assert len(fetched) < len(digests) // 4
    assert sum(fetched) < sum(len(b) for b in bodies) * 1.1
    fetched.clear()
    for digest, body in zip(digests, bodies, strict=True):
        reader.verify(digest)
        assert reader.get_bytes(digest) == body
    assert fetched == []
    spool = reader.spool.root
    assert all(reader.spool.has(d) for d in digests)
    # one file of the blobs' bytes, each once: not a file created per blob
    assert [p.name for p in spool.iterdir() if not p.name.startswith(".")] == ["blobs"]
    assert (spool / "blobs").stat().st_size == sum(len(b) for b in bodies)
    reader.close()
    assert not spool.exists()


def test_verify_many_names_the_damaged_blob_and_spools_nothing_of_it(
        repo_dir: tuple[Path, str]) -> None:
    """A flipped byte inside one small blob of a shared range fails that blob, by digest;
    a later read of it fetches again (and fails again) rather than trusting a partial copy."""
    root, key = repo_dir
    writer = _open(root, key)
    bodies = [os.urandom(5000) for _ in range(10)]
    digests = [writer.put_bytes(b) for b in bodies]
    writer.flush()
    victim = digests[6]
    _pack, entry = writer.repo._locate(writer.repo.blob(victim)[1][0])  # type: ignore[index, misc]
    pack = next(p for p in (root / "repo" / "data").rglob("*") if p.is_file())
    raw = bytearray(pack.read_bytes())
    raw[entry[1] + entry[2] // 2] ^= 1
    pack.write_bytes(bytes(raw))
    reader = _open(root, key, cache="other")
    with pytest.raises(BlobCorruptError) as info:
        reader.verify_many(digests)
    assert info.value.digest == victim
    assert not reader.spool.has(victim)
    with pytest.raises(BlobCorruptError):
        reader.get_bytes(victim)


def test_a_spool_a_killed_process_left_is_removed(repo_dir: tuple[Path, str]) -> None:
    """Spool directories whose lock nobody holds go when the next spool opens."""
    root, key = repo_dir
    writer = _open(root, key)
    digest = writer.put_bytes(b"spooled " * 100)
    writer.flush()
    first = _open(root, key, cache="shared")
    first.verify(digest)
    left = first.spool.root
    os.close(first.spool._lock_fd)  # type: ignore[arg-type]   # as if the process died
    first.spool._lock_fd = None
    second = _open(root, key, cache="shared")
    second.verify(digest)
    assert not left.exists() and second.spool.root.exists()
    second.close()


def test_the_spool_keeps_each_verified_blob_in_its_own_region_of_one_file(
        tmp_path: Path) -> None:
    """Blobs spooled side by side read back as written, through Python and through the
    kernel's copy; a writer never runs into the next region, one cut short is never
    readable, and a spool file cut short since raises where the bytes run out."""
    from preimage.store.packs._spool import Spool

    spool = Spool(tmp_path / "spool")
    bodies = {f"{i:064x}": os.urandom(n) for i, n in enumerate([10, 3 << 20, 0, 5000])}
    for digest, body in bodies.items():
        w = spool.writer(digest, len(body))
        assert w is not None
        for at in range(0, len(body), 1 << 20):
            w.write(body[at:at + (1 << 20)])
        w.commit()
    over = spool.writer("e" * 64, 4)
    assert over is not None
    with pytest.raises(BlobCorruptError):
        over.write(b"12345")
    short = spool.writer("f" * 64, 4)
    assert short is not None
    short.write(b"12")
    short.commit()
    assert not spool.has("f" * 64) and spool.read("f" * 64) is None
    for digest, body in bodies.items():
        blob = spool.read(digest)
        assert blob is not None and b"".join(blob) == body
        out = tmp_path / f"out-{digest[-1]}"
        with open(out, "wb") as fh:
            again = spool.read(digest)
            assert again is not None
            again.copy_into(fh.fileno())
        assert out.read_bytes() == body
    os.truncate(spool.root / "blobs", 1000)
    cut = spool.read(f"{1:064x}")
    assert cut is not None
    with pytest.raises(BlobCorruptError):
        b"".join(cut)
    cut_again = spool.read(f"{1:064x}")
    assert cut_again is not None
    with open(tmp_path / "cut", "wb") as fh, pytest.raises(BlobCorruptError):
        cut_again.copy_into(fh.fileno())
    root = spool.root
    spool.close()
    assert not root.exists()
