"""Exceptions raised by preimage.

The hierarchy::

    PreimageError
    ├── UsageError                    bad input from the caller; fix the input and retry
    │   ├── InvalidTargetError        a malformed or unsupported target URI
    │   ├── NoSuchConnectorError      no connector is registered for a scheme
    │   ├── BackupNotFoundError       an unknown backup ID
    │   └── UnsafePathError           a snapshot path that would escape its target
    ├── StoreError                    the backup store itself is in trouble
    │   ├── StoreUnavailableError     the store cannot be opened or written (full, read-only)
    │   │   └── RemoteUnavailableError    the object store or the catalog server does not answer
    │   ├── StoreBusyError            another process holds a store-wide lock (prune, upgrade)
    │   ├── StoreFormatError          the store was written by a newer preimage
    │   ├── StoreConfigError          a store URL, credential, key or bucket is wrong: fix the setting
    │   │   └── WrongKeyError         the encryption key does not open this store
    │   ├── BlobMissingError          a blob a snapshot needs is gone
    │   └── BlobCorruptError          a blob no longer matches its digest
    ├── CaptureAbandonedError         a capture outlived the decision that waited for it
    ├── ConnectorError                talking to an external system failed
    │   ├── TransientConnectorError   worth retrying: unreachable, timed out, dropped
    │   └── TerminalConnectorError    retrying will not help: denied, missing, refused
    └── RestoreError                  a restore could not be carried out
        └── RestoreConflictError      live state changed and the policy said refuse

Every exception carries its context as attributes and a message that says what
to do next.  ``UsageError`` maps to CLI exit code 2.
"""

from __future__ import annotations


class PreimageError(Exception):
    """Base of every error preimage raises on purpose."""


class UsageError(PreimageError):
    """The caller asked for something that cannot be done as asked."""


class InvalidTargetError(UsageError):
    """A target URI could not be parsed or is not valid for its connector."""

    def __init__(self, uri: str, reason: str) -> None:
        self.uri = uri
        self.reason = reason
        super().__init__(f"invalid target {uri!r}: {reason}")


class NoSuchConnectorError(UsageError):
    """No connector is registered for a URI scheme."""

    def __init__(self, scheme: str, known: list[str], hint: str | None = None) -> None:
        self.scheme = scheme
        self.known = known
        self.hint = hint
        msg = f"no connector for scheme {scheme!r}"
        if hint:
            msg += f": {hint}"
        msg += f" (known schemes: {', '.join(sorted(known))})"
        super().__init__(msg)


class BackupNotFoundError(UsageError):
    """A backup ID matched nothing in the catalog."""

    def __init__(self, backup_id: str) -> None:
        self.backup_id = backup_id
        super().__init__(
            f"no backup with id {backup_id!r} — run `preimage list` to see the backups"
        )


class UnsafePathError(UsageError):
    """A snapshot entry would write outside the restore target."""

    def __init__(self, path: str, reason: str) -> None:
        self.path = path
        self.reason = reason
        super().__init__(f"refusing unsafe path {path!r}: {reason}; nothing was written")


class StoreError(PreimageError):
    """The backup store failed."""


class StoreUnavailableError(StoreError):
    """The store cannot be created, opened or written."""

    def __init__(self, path: str, reason: str) -> None:
        self.path = path
        self.reason = reason
        super().__init__(
            f"backup store at {path} is unavailable: {reason} — free space, fix permissions, "
            "or point PREIMAGE_HOME at a writable directory"
        )


class StoreBusyError(StoreError):
    """Another process holds a store-wide lock (a prune, an upgrade)."""

    def __init__(self, path: str, lock: str) -> None:
        self.path = path
        self.lock = lock
        super().__init__(
            f"backup store at {path} is busy: another {lock} is running — wait for it to "
            "finish and run this again"
        )


class StoreFormatError(StoreError):
    """The store's format is newer than this preimage understands."""

    def __init__(self, path: str, found: int, supported: int) -> None:
        self.path = path
        self.found = found
        self.supported = supported
        super().__init__(
            f"backup store at {path} has format {found}, newer than this preimage understands "
            f"(up to {supported}); upgrade preimage — the store was left untouched"
        )


class RemoteUnavailableError(StoreUnavailableError):
    """A remote object store or catalog server cannot be reached (worth retrying)."""

    def __init__(self, where: str, reason: str) -> None:
        self.path = where
        self.reason = reason
        StoreError.__init__(
            self,
            f"cannot reach {where}: {reason} — is the server running and the URL right? "
            "nothing was written",
        )


class StoreConfigError(StoreError):
    """The store's URL, credentials, key or bucket are wrong; retrying will not help."""

    def __init__(self, message: str, *, where: str | None = None) -> None:
        self.where = where
        super().__init__(message)


class WrongKeyError(StoreConfigError):
    """The encryption key does not open this store."""

    def __init__(self, where: str) -> None:
        super().__init__(
            f"the encryption key does not open the store at {where} — set PREIMAGE_STORE_KEY "
            "(or PREIMAGE_STORE_KEY_FILE) to the key the store was created with; "
            "nothing was written",
            where=where,
        )


#: What a blob error means for the command that met it, unless it says otherwise: a
#: restore checks every blob before its first write.
UNRESTORABLE = "the backup cannot be restored whole — nothing was written"


class BlobMissingError(StoreError):
    """A blob named by a snapshot is not in the store."""

    def __init__(self, digest: str, *, backup_id: str | None = None, path: str | None = None,
                 consequence: str = UNRESTORABLE):
        self.consequence = consequence
        self.digest = digest
        self.backup_id = backup_id
        self.path = path
        where = f" for {path!r}" if path else ""
        of = f" of backup {backup_id}" if backup_id else ""
        super().__init__(
            f"blob {digest[:16]}…{where}{of} is missing from the store; {consequence}"
        )


class BlobCorruptError(StoreError):
    """A blob's bytes no longer hash to its name."""

    def __init__(self, digest: str, *, backup_id: str | None = None, path: str | None = None,
                 consequence: str = UNRESTORABLE):
        self.consequence = consequence
        self.digest = digest
        self.backup_id = backup_id
        self.path = path
        where = f" for {path!r}" if path else ""
        of = f" of backup {backup_id}" if backup_id else ""
        super().__init__(
            f"blob {digest[:16]}…{where}{of} is corrupt (its content no longer matches its "
            f"digest); {consequence}"
        )


class CaptureAbandonedError(PreimageError):
    """A capture went on after whoever waited for it had given up (the hook's
    ``--timeout``): the call it was for may be running, so what it would read next is
    no longer the state before the call.  The backup is ``abandoned``, never complete."""

    def __init__(self, backup_id: str) -> None:
        self.backup_id = backup_id
        super().__init__(
            f"backup {backup_id} was abandoned: its capture outlived the hook's timeout, so "
            "the call may have changed what it was reading; nothing of it can be restored "
            "(raise --timeout or narrow what the layer protects)"
        )


class ConnectorError(PreimageError):
    """An external system could not be read or written."""

    def __init__(self, message: str, *, target: str | None = None) -> None:
        self.target = target
        super().__init__(message)


class TransientConnectorError(ConnectorError):
    """A failure that may go away: unreachable host, timeout, dropped connection."""


class TerminalConnectorError(ConnectorError):
    """A failure that retrying will not fix: bad credentials, missing object, refusal."""


class RestoreError(PreimageError):
    """A restore could not be completed."""


class RestoreConflictError(RestoreError):
    """Live state differs from the capture and the policy is ``refuse``."""

    def __init__(self, target: str, changed: list[str]) -> None:
        self.target = target
        self.changed = changed
        shown = ", ".join(changed[:5]) + (" …" if len(changed) > 5 else "")
        super().__init__(
            f"{target} changed since the capture ({shown}); the policy is 'refuse' — "
            "re-run with --policy overwrite or --policy merge"
        )
