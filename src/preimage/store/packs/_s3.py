"""S3-compatible object storage through obstore (the Rust ``object_store`` crate).

obstore was chosen by measured throughput against boto3 and s3fs on the same
SeaweedFS (``benchmarks/s3_clients.py``; numbers in docs/remote-store.md); it
also imports in milliseconds, which matters on the hook path, and it does
conditional writes (``If-None-Match: *``) that make ``exclusive`` puts safe.

Credentials are read the way the AWS tools read them — ``AWS_ACCESS_KEY_ID``,
``AWS_SECRET_ACCESS_KEY``, ``AWS_SESSION_TOKEN``, ``AWS_REGION`` — and never
from the store URL, so no secret can travel in a URL that is printed or stored.
Requests time out and are retried a few times only: a store that is down is
reported in seconds, not after minutes of back-off.
"""

from __future__ import annotations

import os
import re
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from datetime import timedelta
from typing import Any

from preimage.interface.errors import RemoteUnavailableError, StoreConfigError
from preimage.store.packs._storage import ObjectMissing


@dataclass(frozen=True)
class S3Location:
    """``s3://bucket/prefix?endpoint=…&region=…`` without credentials."""

    bucket: str
    prefix: str
    endpoint: str | None
    region: str | None

    @property
    def url(self) -> str:
        """The location as a URL (safe to print: it never holds a credential)."""
        query = []
        if self.endpoint:
            query.append(f"endpoint={self.endpoint}")
        if self.region:
            query.append(f"region={self.region}")
        path = f"/{self.prefix}" if self.prefix else ""
        return f"s3://{self.bucket}{path}" + (f"?{'&'.join(query)}" if query else "")


class S3Storage:
    """Objects under ``prefix`` in an S3 bucket."""

    def __init__(self, loc: S3Location, env: dict[str, str] | None = None) -> None:
        try:
            import obstore
            from obstore.store import S3Store
        except ImportError as exc:  # pragma: no cover - depends on the install
            raise StoreConfigError(
                "an s3:// store needs obstore — install preimage[remote]"
            ) from exc
        self._obs = obstore
        self.loc = loc
        env = dict(os.environ) if env is None else env
        config: dict[str, Any] = {}
        if loc.endpoint:
            config["endpoint"] = loc.endpoint
            config["virtual_hosted_style_request"] = False
        region = loc.region or env.get("AWS_REGION") or env.get("AWS_DEFAULT_REGION")
        config["region"] = region or "us-east-1"
        for key, var in (("access_key_id", "AWS_ACCESS_KEY_ID"),
                         ("secret_access_key", "AWS_SECRET_ACCESS_KEY"),
                         ("token", "AWS_SESSION_TOKEN")):
            if env.get(var):
                config[key] = env[var]
        self._has_credentials = "access_key_id" in config
        self._store = S3Store(
            loc.bucket,
            prefix=loc.prefix or None,
            config=config,  # type: ignore[arg-type]
            client_options={
                "allow_http": bool(loc.endpoint and loc.endpoint.startswith("http://")),
                "connect_timeout": "5s",
                "timeout": os.environ.get("PREIMAGE_S3_TIMEOUT", "60s"),  # at use: see _spool._limit
            },
            retry_config={
                "max_retries": 3,
                "retry_timeout": timedelta(seconds=15),
                "backoff": {"init_backoff": timedelta(milliseconds=100),
                            "max_backoff": timedelta(seconds=2), "base": 2},
            },
        )

    @property
    def location(self) -> str:
        return self.loc.url

    # ------------------------------------------------------------ errors
    def _error(self, exc: Exception, name: str = "", op: str = "") -> Exception:
        """Map an obstore exception to the store's errors (never echoing a secret)."""
        from obstore import exceptions as ox

        text = str(exc)
        where = self.loc.url
        # A GET whose body broke off is retried from where it stopped; if the object was
        # deleted meanwhile (a prune replacing an index) obstore wraps the NotFound of the
        # retry in a GenericError: that is still a missing object, not an unreachable store.
        # A PUT answered 404 comes the same way: there, the bucket is what is missing.
        missing = isinstance(exc, ox.NotFoundError) or bool(
            name and op in ("get", "read part of", "put")
            and re.search(r"\bsource: NotFound \{|status code: 404\b", text))
        if missing or "NoSuchBucket" in text:
            # A write has no object to miss: a 404 to it is the bucket (or the URL's path)
            if "NoSuchBucket" in text or not name or op == "put":
                return StoreConfigError(
                    f"bucket {self.loc.bucket!r} does not exist at {where} — create it (or fix "
                    "the URL) and run `preimage store init`; nothing was written",
                    where=where,
                )
            return ObjectMissing(name)
        if isinstance(exc, ox.UnauthenticatedError | ox.PermissionDeniedError) or any(
            code in text for code in ("InvalidAccessKeyId", "SignatureDoesNotMatch", "AccessDenied",
                                      "403 Forbidden", "Forbidden")
        ):
            how = "credentials were refused" if self._has_credentials else "no credentials set"
            return StoreConfigError(
                f"the object store at {where} refused access ({how}) — set AWS_ACCESS_KEY_ID "
                "and AWS_SECRET_ACCESS_KEY to a key with read/write access to the bucket; "
                "nothing was written",
                where=where,
            )
        reason = _first_cause(text)
        if op:   # which request it was: a bare "404" names neither
            reason += f" (to {op} {name})" if name else f" (to {op})"
        return RemoteUnavailableError(f"the object store at {where}", reason)

    # ------------------------------------------------------------ operations
    def put(self, name: str, data: bytes | bytearray, *, exclusive: bool = False) -> bool:
        from obstore import exceptions as ox

        try:
            self._obs.put(self._store, name, data, mode="create" if exclusive else "overwrite",
                          use_multipart=len(data) > 64 << 20)
        except (ox.AlreadyExistsError, ox.PreconditionError):
            if exclusive:
                return False
            raise
        except Exception as exc:
            raise self._error(exc, name, "put") from None
        return True

    def get(self, name: str) -> bytes:
        try:
            return bytes(self._obs.get(self._store, name).bytes())
        except Exception as exc:
            raise self._error(exc, name, "get") from None

    def get_range(self, name: str, start: int, length: int) -> bytes | memoryview:
        try:   # a view of the buffer obstore filled: megabytes per call, not copied again
            return memoryview(self._obs.get_range(self._store, name, start=start, length=length))
        except Exception as exc:
            raise self._error(exc, name, "read part of") from None

    def list(self, prefix: str) -> Iterator[tuple[str, int]]:
        try:
            for batch in self._obs.list(self._store, prefix=prefix or None, chunk_size=1000):
                for meta in batch:
                    yield str(meta["path"]), int(meta["size"])
        except Exception as exc:
            raise self._error(exc, op=f"list {prefix or 'the bucket'}") from None

    def delete(self, names: Sequence[str]) -> None:
        if not names:
            return
        try:
            for i in range(0, len(names), 1000):
                self._obs.delete(self._store, list(names[i : i + 1000]))
        except Exception as exc:
            err = self._error(exc, op=f"delete {len(names)} objects")
            if not isinstance(err, ObjectMissing):
                raise err from None

    def check(self) -> None:
        # One LIST both proves the bucket exists and that the credentials work.
        for _ in self.list("config"):
            break


def _first_cause(text: str) -> str:
    """The innermost reason of a chained obstore message, e.g. ``Connection refused``, or
    the status a server answered (``503 Service Unavailable``).  A retried request's
    message carries ``retry_timeout: 15s`` whatever went wrong: that is not a timeout."""
    status = re.search(r"status code: (\d{3}[^:\n]*)", text)
    if status:
        return f"the server answered {status.group(1).strip()}"
    lower = re.sub(r"retry_timeout:\s*\S+", "", text.lower())
    for needle, reason in (("connection refused", "connection refused"),
                           ("timed out", "timed out"), ("timeout", "timed out"),
                           ("dns error", "unknown host"),
                           ("connection reset", "connection reset")):
        if needle in lower:
            return reason
    line = text.strip().splitlines()[0] if text.strip() else "no answer"
    return line[:200]
