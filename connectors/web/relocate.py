"""A web application's records re-addressed to another instance of the same app
(``restore --to web+isso://staging:8080/blog/post``, ``score --against``).

Records are keyed by what the adapter calls their natural key (a comment's thread,
parent, author and text; a ticket's summary), never by the instance's ids, so the
snapshot moves by its address: host and port, the location (the destination's, or the
backup's when the destination names none) and the destination's own parameters (its
``?profile=`` holds the login to that instance).  Ids, created times and vote counts
are assigned by the instance (``server`` class) and differ anyway.  Refused: another
adapter, and the backup's own records (same instance, same location).
"""

from __future__ import annotations

from urllib.parse import urlencode

from preimage.connectors.web.address import adapter_name
from preimage.interface.errors import UsageError
from preimage.interface.target import Target
from preimage.restoration import IdentityMapping, Relocation
from preimage.snapshot_schemas.web import WebSnapshot


def relocate_records(snapshot: WebSnapshot, destination: Target) -> Relocation:
    """``snapshot`` as the records of the destination instance."""
    if not destination.scheme.startswith("web+") or adapter_name(destination) != snapshot.adapter:
        raise UsageError(f"{destination.redacted}: {snapshot.adapter} records restore into "
                         f"another web+{snapshot.adapter}:// instance")
    source = Target.parse(snapshot.target)
    location = destination.path if destination.path not in ("", "/") else snapshot.location
    params = {k: v[-1] for k, v in source.query.items() if v}
    params.update({k: v[-1] for k, v in destination.query.items() if v})
    netloc = (destination.host or "") + (f":{destination.port}" if destination.port else "")
    target = f"{destination.scheme}://{netloc}{location}" + (
        "?" + urlencode(sorted(params.items())) if params else "")
    where = (destination.host, destination.port, location)
    if where == (source.host, source.port, snapshot.location):
        raise UsageError(f"--to {destination.redacted} holds the backup's own records "
                         f"({snapshot.target}); restore in place without --to. Nothing was written")
    scheme = "https" if params.get("https") in ("1", "true", "yes") else "http"
    root = "/" + params.get("root", "").strip("/")
    base = f"{scheme}://{netloc}{root.rstrip('/')}"
    mappings = [IdentityMapping(what="instance", old=snapshot.base_url, new=base)]
    if location != snapshot.location:
        mappings.append(IdentityMapping(what="location", old=snapshot.location, new=location))
    moved = snapshot.model_copy(update={"target": target, "base_url": base, "location": location})
    return Relocation(moved, tuple(mappings))
