"""One origin's client-side state re-addressed to another browser profile (``restore
--to browser:///other-profile?origin=…``, ``score --against``).

Cookies, storages and IndexedDB are keyed by origin, domain and name, never by the
profile, so only the profile moves: the target and ``profile``.  The destination keeps
the backup's origins unless it names its own (they must be the same: state of one
site is not moved to another site).  Refused: the source profile itself, and a
destination that is not a profile directory of its own.
"""

from __future__ import annotations

import os

from preimage.connectors.browser.address import parse_target
from preimage.interface.errors import UsageError
from preimage.interface.target import Target
from preimage.restoration import IdentityMapping, Relocation
from preimage.snapshot_schemas.browser import BrowserSnapshot


def relocate_profile(snapshot: BrowserSnapshot, destination: Target) -> Relocation:
    """``snapshot`` as the same origins' state in the destination profile."""
    if destination.scheme != "browser":
        raise UsageError(f"{destination.redacted}: browser state restores into a browser:// "
                         "profile")
    _src_profile, origins = parse_target(Target.parse(snapshot.target))
    if "origin" not in destination.query:
        destination = Target.parse(destination.redacted + ("&" if "?" in destination.redacted
                                   else "?") + "&".join(f"origin={o}" for o in origins))
    profile, theirs = parse_target(destination)
    if sorted(theirs) != sorted(origins):
        raise UsageError(
            f"--to {destination.redacted}: the backup holds {', '.join(origins)}; a browser "
            "profile restores into the same origins of another profile. Nothing was written")
    if os.path.realpath(profile) == os.path.realpath(snapshot.profile):
        raise UsageError(
            f"--to {destination.redacted} is the backup's own profile ({snapshot.profile}); "
            "restore in place without --to. Nothing was written")
    target = f"browser://{profile}?" + "&".join(f"origin={o}" for o in origins)
    moved = snapshot.model_copy(update={"target": target, "profile": str(profile)})
    return Relocation(moved, (IdentityMapping(what="profile", old=snapshot.profile,
                                              new=str(profile)),))
