"""Large objects (whole-database targets): their bytes, owner, grants and comment.

A large object is named by its OID, which applications store in their own
rows, so a restore creates it again under the same OID (``lo_create(oid)``)
and writes its bytes back in chunks; one whose bytes differ is unlinked and
written again; one created since the capture is unlinked.  The bytes are
read in chunks with ``lo_get`` inside the capture's snapshot, compared by
the server's own ``sha256``.
"""

from __future__ import annotations

import functools
import hashlib
import itertools
from collections.abc import Iterator
from typing import Any

from preimage.interface.blobs import BlobStore
from preimage.snapshot_schemas.postgres import PgLargeObject

Cursor = Any
CHUNK = 1 << 20
PAGE = 2048  # the server's page of a large object (LOBLKSIZE)
WHOLE = 256 << 20  # hashed by the server in one piece up to this size


def read_large_objects(cur: Cursor, blobs: BlobStore | None) -> list[PgLargeObject]:
    """Every large object; with ``blobs``, its bytes go into a blob.

    The size comes from a seek to the end (``lo_get`` of a whole object fails past 1 GiB,
    and a sparse object written at a 4 GiB offset is that large); objects up to
    :data:`WHOLE` are hashed by the server, larger ones chunk by chunk here."""
    cur.execute(
        """SELECT m.oid, pg_get_userbyid(m.lomowner) AS owner,
            ARRAY(SELECT x::text FROM unnest(coalesce(m.lomacl, acldefault('L', m.lomowner))) x
                  ORDER BY 1) AS acl,
            obj_description(m.oid, 'pg_largeobject') AS comment,
            lo_lseek64(lo_open(m.oid, 262144), 0, 2) AS size
        FROM pg_largeobject_metadata m ORDER BY m.oid""")
    rows = cur.fetchall()
    out = []
    for r in rows:
        digest = sha = None
        if r["size"] <= WHOLE:
            cur.execute("SELECT encode(sha256(lo_get(%s)), 'hex') AS sha", (r["oid"],))
            sha = cur.fetchone()["sha"]
            if blobs is not None:
                digest = blobs.put_chunks(_chunks(cur, r["oid"], r["size"]))
        else:
            hasher = hashlib.sha256()
            chunks = _hashed(_chunks(cur, r["oid"], r["size"]), hasher)
            if blobs is not None:
                digest = blobs.put_chunks(chunks)
            else:
                for _ in chunks:
                    pass
            sha = hasher.hexdigest()
        out.append(PgLargeObject(loid=r["oid"], size=r["size"], sha256=sha,
                                 data_digest=digest, owner=r["owner"], acl=list(r["acl"]),
                                 comment=r["comment"]))
    return out


def _hashed(chunks: Iterator[bytes], hasher: Any) -> Iterator[bytes]:
    for chunk in chunks:
        hasher.update(chunk)
        yield chunk


def _chunks(cur: Cursor, oid: int, size: int) -> Iterator[bytes]:
    for offset in range(0, size, CHUNK):
        cur.execute("SELECT lo_get(%s, %s, %s) AS data", (oid, offset, CHUNK))
        yield bytes(cur.fetchone()["data"])


def write_large_object(cur: Cursor, lo: PgLargeObject, blobs: BlobStore) -> str:
    """Create ``lo`` under its OID and write its captured bytes, sparse as the server
    keeps them: pages of zero bytes are not written (a page never written reads as
    zeros), and the object is extended to its size at the end (``lo_truncate64``)."""
    cur.execute("SELECT lo_create(%s)", (lo.loid,))
    end = written = 0
    if lo.data_digest is not None:
        for offset, data in _runs(blobs.chunks(lo.data_digest, path=f"large object {lo.loid}")):
            cur.execute("SELECT lo_put(%s, %s, %s)", (lo.loid, offset, data))
            end, written = offset + len(data), written + len(data)
    if end < lo.size:
        cur.execute("SELECT lo_truncate64(lo_open(%s, 131072), %s)", (lo.loid, lo.size))
    return f"{lo.size} bytes ({written} written)"


def _runs(chunks: Iterator[bytes]) -> Iterator[tuple[int, bytes]]:
    """``(offset, bytes)`` of each run of pages that are not all zero bytes, at most
    :data:`CHUNK` at a time; a run's trailing zero bytes are left off."""
    offset = start = 0   # offset of ``pending``'s first byte (page-aligned); of ``run``'s
    pending = b""
    run = bytearray()
    last: list[bytes | None] = [None]
    for chunk in itertools.chain(chunks, last):
        if chunk is None:  # the last page, maybe partial
            block, pending = pending, b""
        else:
            pending += bytes(chunk)
            cut = len(pending) - len(pending) % PAGE
            block, pending = pending[:cut], pending[cut:]
        if block and not block.strip(b"\0"):  # zeros only: a hole
            if run:
                yield start, bytes(run).rstrip(b"\0")
                run.clear()
            offset += len(block)
            continue
        for i in range(0, len(block), PAGE):
            page = block[i:i + PAGE]
            if page.strip(b"\0"):
                if not run:
                    start = offset + i
                run += page
                if len(run) >= CHUNK:
                    yield start, bytes(run)
                    run.clear()
            elif run:
                yield start, bytes(run).rstrip(b"\0")
                run.clear()
        offset += len(block)
    if run:
        yield start, bytes(run).rstrip(b"\0")


def plan_large_objects(plan: Any, captured: list[Any], live: list[Any],
                       blobs: BlobStore) -> set[str]:
    """Add the steps that bring large objects back to ``plan``; return their keys."""
    from preimage.connectors.postgres import ddl
    from preimage.connectors.postgres.plan import Step, fresh_acl

    have = {i.natural_key(): i for i in live if isinstance(i, PgLargeObject)}
    want = [i for i in captured if isinstance(i, PgLargeObject)]
    keys = {lo.natural_key() for lo in want}
    for key, lo in have.items():
        if key not in keys:
            plan.add("drop-other", Step(key, "unlink (created after the capture)",
                                        [f"SELECT pg_catalog.lo_unlink({lo.loid})"],
                                        removes=True, destructive=True))
    for lo in want:
        key = lo.natural_key()
        now = have.get(key)
        name = str(lo.loid)
        if now is None or now.sha256 != lo.sha256:
            if now is not None:
                plan.add("drop-other", Step(key, "unlink to write it again",
                                            [f"SELECT pg_catalog.lo_unlink({lo.loid})"],
                                            destructive=True))
            plan.add("rows", Step(key, "write large object",
                                  run=functools.partial(write_large_object, lo=lo, blobs=blobs)))
            now = None
        sql = []
        if lo.owner and (now is None or now.owner != lo.owner):
            sql += ddl.owner_statement("LARGE OBJECT", name, lo.owner)
        if (now.comment if now else None) != lo.comment:
            sql.append(ddl.comment_statement(f"LARGE OBJECT {name}", lo.comment))
        # a new object's grants are its owner's default (a NULL lomacl): a capture equal
        # to them is left so, as pg_dump leaves it
        sql += ddl.acl_statements("LARGE OBJECT", name, lo.acl, now.acl if now is not None else
                                  [f"{lo.owner}=rw/{lo.owner}"] if lo.owner else fresh_acl(None))
        if sql:
            plan.add("finish", Step(key, "owner, comment, grants", sql))
    return keys
