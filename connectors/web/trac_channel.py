"""Trac's admin channel: Trac's own model API on the environment directory.

This file runs *inside the Python that has Trac installed* (the one behind
``trac-admin``), as ``python trac_channel.py ENV_DIR``: it reads one JSON
command per line on stdin and answers one JSON line each on stdout.  It is
the access ``trac-admin`` has — the environment directory, read and write —
and it goes through ``trac.ticket.model`` like ``trac-admin`` does, never
through SQL of its own.  Unlike the web UI it can set who wrote a change and
when, so reporters, comment authors and all times come back exactly.

Commands (``op``):

* ``create_ticket`` — ``initial`` field values, ``reporter``, ``time`` (ISO),
  ``changes`` (``author``, ``date`` in µs, ``comment``, ``fields``
  ``{name: [old, new]}``), replayed in order → ``{"id": N}``;
* ``append_changes`` — ``id``, ``changes`` replayed on an existing ticket;
* ``delete_changes`` — ``id``, ``dates`` (µs, newest first) and
  ``changetime`` (µs): the changes are removed (Trac puts each field back to
  its old value) and the ticket's change time set;
* ``delete_ticket`` — ``id``;
* ``put_milestone`` — ``name``, ``description``, ``due``, ``completed``
  (ISO or null), created when missing;
* ``delete_milestone`` — ``name`` (tickets keep their milestone value);
* ``put_wiki`` — ``name``, ``keep`` (how many of the live versions stay: the
  newer ones are deleted) and ``versions`` (``text``, ``author``,
  ``comment``, ``time`` ISO), saved after the kept ones in order, so their
  numbers, authors and times come back;
* ``delete_wiki`` — ``name``, every version;
* ``put_repository`` — ``name``, ``type``, ``dir``, ``description``, ``url``,
  ``hidden``, ``sync_per_request``: added when missing, then set, as
  ``trac-admin repository add`` and ``set`` do;
* ``delete_repository`` — ``name`` (Trac forgets it; its directory stays).
"""

from __future__ import annotations

import json
import sys
from datetime import UTC, datetime
from typing import Any


def _dt(iso: str | None) -> datetime | None:
    if not iso:
        return None
    return datetime.fromisoformat(iso.replace("Z", "+00:00")).astimezone(UTC)


def _replay(env: Any, tid: int, changes: list[dict[str, Any]]) -> None:
    from trac.ticket.model import Ticket
    from trac.util.datefmt import from_utimestamp

    for ch in changes:
        t = Ticket(env, tid)
        for name, (_old, new) in ch["fields"].items():
            t[name] = new
        t.save_changes(ch["author"], ch["comment"], when=from_utimestamp(ch["date"]))


def _put_wiki(env: Any, cmd: dict[str, Any]) -> dict[str, Any]:
    from trac.wiki.model import WikiPage

    name = cmd["name"]
    page = WikiPage(env, name)
    while page.exists and page.version > cmd["keep"]:
        page.delete(version=page.version)
        page = WikiPage(env, name)
    for v in cmd["versions"]:
        page = WikiPage(env, name)
        page.text = v["text"]
        page.save(v["author"], v["comment"], _dt(v["time"]))
    return {"version": WikiPage(env, name).version}


def run(env: Any, cmd: dict[str, Any]) -> dict[str, Any]:
    """Carry out one command against the Trac environment ``env``."""
    from trac.ticket.model import Milestone, Ticket
    from trac.util.datefmt import from_utimestamp

    op = cmd["op"]
    if op == "create_ticket":
        t = Ticket(env)
        for name, value in cmd["initial"].items():
            t[name] = value
        t["reporter"] = cmd["reporter"]
        tid = t.insert(when=_dt(cmd["time"]))
        _replay(env, tid, cmd["changes"])
        return {"id": tid}
    if op == "append_changes":
        _replay(env, cmd["id"], cmd["changes"])
        return {"id": cmd["id"]}
    if op == "delete_changes":
        for date in cmd["dates"]:
            Ticket(env, cmd["id"]).delete_change(
                cdate=from_utimestamp(date), when=from_utimestamp(cmd["changetime"])
            )
        return {"id": cmd["id"]}
    if op == "delete_ticket":
        Ticket(env, cmd["id"]).delete()
        return {}
    if op == "put_milestone":
        from trac.resource import ResourceNotFound

        try:
            m = Milestone(env, cmd["name"])
            exists = True
        except ResourceNotFound:
            m = Milestone(env)
            m.name = cmd["name"]
            exists = False
        m.description = cmd["description"]
        m.due = _dt(cmd["due"])
        m.completed = _dt(cmd["completed"])
        if exists:
            m.update()
        else:
            m.insert()
        return {}
    if op == "delete_milestone":
        Milestone(env, cmd["name"]).delete()
        return {}
    if op == "put_repository":
        from trac.versioncontrol.api import DbRepositoryProvider, RepositoryManager

        provider = DbRepositoryProvider(env)
        if cmd["name"] not in RepositoryManager(env).get_all_repositories():
            provider.add_repository(cmd["name"], cmd["dir"], cmd["type"] or None)
        provider.modify_repository(cmd["name"], {
            "dir": cmd["dir"], "type": cmd["type"], "description": cmd["description"],
            "url": cmd["url"], "hidden": "1" if cmd["hidden"] else None,
            "sync_per_request": "1" if cmd["sync_per_request"] else None})
        return {}
    if op == "delete_repository":
        from trac.versioncontrol.api import DbRepositoryProvider

        DbRepositoryProvider(env).remove_repository(cmd["name"])
        return {}
    if op == "put_wiki":
        return _put_wiki(env, cmd)
    if op == "delete_wiki":
        from trac.wiki.model import WikiPage

        page = WikiPage(env, cmd["name"])
        if page.exists:
            page.delete()
        return {}
    raise ValueError(f"unknown command {op!r}")


def main() -> int:
    """Serve commands from stdin for the environment named by ``argv[1]``."""
    from trac.cache import CacheManager
    from trac.env import Environment

    env = Environment(sys.argv[1])
    for line in sys.stdin:
        if not line.strip():
            continue
        # each command sees what others wrote since (tracd does this per request)
        CacheManager(env).reset_metadata()
        try:
            out = {"ok": True, "result": run(env, json.loads(line))}
        except Exception as exc:  # every failure goes back to the caller as text
            out = {"ok": False, "error": f"{type(exc).__name__}: {exc}"}
        sys.stdout.write(json.dumps(out) + "\n")
        sys.stdout.flush()
    env.shutdown()
    return 0


if __name__ == "__main__":
    sys.exit(main())
