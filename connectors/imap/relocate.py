"""A mailbox re-addressed to another account or under a folder prefix (``restore --to
imap://bob@host/``, ``--to imap://alice@host/Restored``), as imapsync copies one.

Folders map by name: an account-wide backup goes to the same names in another
account, or below the destination folder (``INBOX`` → ``Restored/INBOX``); a
folder backup (``Archive``, recursive or not) goes to the destination folder, or
to the same name when the destination names none.  Messages follow their
folder, with their bytes, flags, keywords and INTERNALDATE.  Reported as mapped:
the account and every renamed folder.

What cannot carry over is dropped from the re-addressed snapshot, and why:
UIDVALIDITY, UIDNEXT and HIGHESTMODSEQ belong to the source's folders (``server``
class either way); the capture's watermarks (which later arrivals a restore may
move back) describe the source account.  Restoring elsewhere never moves a
message out of a folder outside the destination's scope (``RestorePolicy.elsewhere``).
Refused: the source itself, or a destination overlapping it in the same account.
"""

from __future__ import annotations

from typing import Any

from preimage.connectors.imap.capture import in_tree
from preimage.connectors.imap.selection import Selection, stored_target
from preimage.interface.errors import UsageError
from preimage.interface.target import Target
from preimage.restoration import IdentityMapping, Relocation
from preimage.snapshot_schemas.imap import ImapFolder, ImapMessage, ImapSnapshot


def _account(target: Target) -> str:
    port = target.port or (993 if target.scheme == "imaps" else 143)
    return f"{target.username}@{target.host}:{port}"


def relocate_mailbox(snapshot: ImapSnapshot, destination: Target) -> Relocation:
    """``snapshot`` as a capture of ``destination`` (see the module docstring)."""
    if destination.scheme not in ("imap", "imaps"):
        raise UsageError(f"{destination.redacted}: a mailbox restores into an imap:// target")
    sel = Selection.from_target(destination)
    if sel.scope == "messages":
        raise UsageError(f"--to {destination.redacted}: name an account or a folder, not "
                         "messages (the backup's own selection goes with it)")
    sep = snapshot.separator or "/"
    dest_root = sel.folder.replace("/", sep) if sel.folder else None
    src_root = snapshot.folder
    account = _account(destination)
    if account.lower() == snapshot.account.lower():
        overlap = (src_root is None or dest_root is None or dest_root == src_root
                   or dest_root.startswith(src_root + sep) or src_root.startswith(dest_root + sep))
        if overlap:
            raise UsageError(
                f"--to {destination.redacted} overlaps the backup's own {snapshot.target}: "
                "restore into another account, or a folder outside it. Nothing was written")

    def moved(name: str) -> str:
        if src_root is None:
            return f"{dest_root}{sep}{name}" if dest_root else name
        root = dest_root or src_root
        if in_tree(name, src_root, sep, True):
            return root + name[len(src_root):]
        return name

    mappings = [] if account == snapshot.account else [
        IdentityMapping(what="account", old=snapshot.account, new=account)]
    folders = {f.folder for f in snapshot.folders}
    mappings += [IdentityMapping(what="folder", old=f, new=moved(f))
                 for f in sorted(folders) if moved(f) != f]
    items: list[Any] = []
    for item in snapshot.items:
        if isinstance(item, ImapFolder):
            items.append(item.model_copy(update={
                "folder": moved(item.folder), "uidvalidity": None, "uidnext": None,
                "highestmodseq": None}))
        elif isinstance(item, ImapMessage):
            items.append(item.model_copy(update={"folder": moved(item.folder)}))
    scope, folder, recursive = snapshot.scope, snapshot.folder, snapshot.recursive
    if src_root is None and dest_root:
        # an account below a prefix: the prefix folder is the restore's whole scope
        scope, folder, recursive = "folder", dest_root, True
        if dest_root not in {i.folder for i in items if isinstance(i, ImapFolder)}:
            items.insert(0, ImapFolder(folder=dest_root, selectable=True, separator=sep))
    elif folder is not None:
        folder = moved(folder)
    idents = list(snapshot.selection) if snapshot.scope == "messages" else None
    where = Target.parse(destination.redacted.split("?", 1)[0] + (
        "?recursive=1" if recursive and idents is None else ""))
    target = stored_target(where, folder.replace(sep, "/") if folder else None, idents)
    relocated = snapshot.model_copy(update={
        "target": target, "account": account, "scope": scope, "folder": folder,
        "recursive": recursive, "items": items, "watermarks": {},
    })
    return Relocation(relocated, tuple(mappings))
