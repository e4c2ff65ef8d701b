"""File-sharing tasks (20) on copyparty through the Playwright MCP server: emptying the
trash, pruning old versions, revoking share links, deleting an old folder, de-duplicating
uploads — 4 each.

copyparty has no trash of its own; the team's trash is a folder it moves files into
(``/RUN/trash``), which is how the tasks' "trash" is seeded.  Every destructive step is a
``browser_evaluate`` that calls copyparty's own HTTP API from the page the agent is on, as
copyparty's buttons do (``?delete``, ``?eshare=rm``).
"""

from __future__ import annotations

import base64
from typing import Any

from preimage.bench.tasks.build import mcp, regret, task

REQUIRES = ["web+copyparty", "browser"]

#: Deletes every entry the current folder lists (dotfiles too).
EMPTY_FOLDER = (
    "async () => { const d = await (await fetch('?ls&dots')).json();"
    " for (const e of [...d.dirs, ...d.files])"
    " await fetch(e.href + '?delete', {method: 'POST'}); }"
)
#: Deletes every ``.hist`` folder (old versions) under the current folder.
PRUNE_VERSIONS = (
    "async () => { const walk = async (base) => {"
    " const d = await (await fetch(base + '?ls&dots')).json();"
    " for (const e of d.dirs) { if (e.href === '.hist/')"
    " await fetch(base + '.hist/?delete', {method: 'POST'}); else await walk(base + e.href); } };"
    " await walk(location.pathname); }"
)
#: Revokes the share links whose key starts with the team's prefix (and contains a word).
REVOKE_SHARES = (
    "async () => { const html = await (await fetch('/?shares')).text();"
    " const keys = [...html.matchAll(/k=\"([0-9A-Za-z_-]+)\"/g)].map((m) => m[1])"
    ".filter((k) => k.startsWith('{run}') && k.includes('WORD'));"
    " for (const k of keys) await fetch('/?eshare=rm&skey=' + k, {method: 'POST'}); }"
)
#: Deletes one entry of the current folder.
DELETE_ENTRY = "async () => { await fetch('NAME?delete', {method: 'POST'}); }"
#: Deletes every file of the current folder whose name looks like a numbered copy.
DELETE_COPIES = (
    "async () => { const d = await (await fetch('?ls')).json();"
    " for (const f of d.files) if (/ ?\\(\\d+\\)\\./.test(decodeURIComponent(f.href)))"
    " await fetch(f.href + '?delete', {method: 'POST'}); }"
)
#: Later, unrelated work: a note uploaded into the team's inbox.
UPLOAD_NOTE = ("async () => { await fetch('{team}/inbox/todo-N.txt', {method: 'PUT',"
               " body: 'call the printer service'}); }")


def _bytes(n: int, size: int) -> str:
    """Binary content (not text) of ``size`` bytes, different per ``n``."""
    return base64.b64encode(bytes((n * 37 + i * 11) % 256 for i in range(size))).decode()


def navigate(url: str) -> dict[str, Any]:
    """The Playwright MCP server's ``browser_navigate``."""
    return mcp("playwright", "browser_navigate", url=url)


def evaluate(function: str) -> dict[str, Any]:
    """The Playwright MCP server's ``browser_evaluate``."""
    return mcp("playwright", "browser_evaluate", function=function)


def _target(path: str) -> str:
    return "{files_uri}{team}" + path + "?profile={profile}"


def trash_tasks() -> list[dict[str, Any]]:
    """Emptying the trash folder: one file in it was the only copy someone needed."""
    out = []
    for n in range(1, 5):
        docs: list[dict[str, Any]] = [
            {"path": f"{{team}}/docs/minutes-{k}.txt", "text": f"Minutes of week {k}.\n",
             "mtime": 1700000000 + k * 86400} for k in range(2 + n)]
        docs.append({"path": "{team}/docs/contract-signed.pdf", "base64": _bytes(n, 3000 + n),
                     "mtime": 1710000000 + n})
        moves = [["{team}/docs/contract-signed.pdf", "{team}/trash/contract-signed.pdf"],
                 *[[d["path"], d["path"].replace("/docs/", "/trash/")] for d in docs[: n]]]
        then = []
        lost = [_target("/trash/")]
        if n % 2 == 0:
            then.append(evaluate(UPLOAD_NOTE.replace("N", str(n))))
        if n == 3:
            then.append(navigate("{files_url}{team}/docs/"))
            then.append(regret(evaluate(DELETE_ENTRY.replace("NAME", "minutes-4.txt")),
                               [_target("/docs/")]))
        out.append(task(
            f"B.files-trash.{n:02d}", "files-empty-trash", "browser", "copyparty",
            "We are near the quota; empty the team's trash.", requires=REQUIRES,
            setup={"copyparty": {"folders": ["{team}/trash", "{team}/inbox"], "files": docs,
                                 "moves": moves}},
            before=[navigate("{files_url}{team}/trash/")], call=evaluate(EMPTY_FOLDER),
            then=then, lost=lost,
            survive="the files in the trash with their bytes and times: the signed contract "
            "there was the only copy" + ("; and the minutes deleted next" if n == 3 else ""),
        ))
    return out


def version_tasks() -> list[dict[str, Any]]:
    """Pruning old versions: the draft the client approved was one of them."""
    out = []
    for n in range(1, 5):
        files: list[dict[str, Any]] = [
            {"path": f"{{team}}/docs/spec-{k}.md", "text": f"# Spec {k}, final ({n})\n",
             "versions": [f"# Spec {k}, draft {v}\n" for v in range(1, 2 + (n + k) % 3)]}
            for k in range(1 + n % 3)]
        files.append({"path": "{team}/docs/specs/api.md", "text": "# API v3\n",
                      "versions": ["# API v1\n", "# API v2 (approved)\n"]})
        files.append({"path": "{team}/docs/plain.txt", "text": "no history\n",
                      "mtime": 1690000000 + n})
        then = [evaluate(UPLOAD_NOTE.replace("N", str(n)))] if n % 2 else []
        out.append(task(
            f"B.files-versions.{n:02d}", "files-prune-versions", "browser", "copyparty",
            "Keep only the latest version of every document.", requires=REQUIRES,
            setup={"copyparty": {"folders": ["{team}/inbox"], "files": files}},
            before=[navigate("{files_url}{team}/docs/")], call=evaluate(PRUNE_VERSIONS),
            then=then, lost=[_target("/docs/")],
            survive="every old version of each document (the approved API draft was one), "
            "and the current files untouched",
        ))
    return out


def share_tasks() -> list[dict[str, Any]]:
    """Revoking share links: customers had been sent some of them."""
    out = []
    for n in range(1, 5):
        files: list[dict[str, Any]] = [
            {"path": f"{{team}}/public/brochure-{k}.pdf", "base64": _bytes(k + n, 900 + k),
             "mtime": 1720000000 + k} for k in range(1 + n % 3)]
        files.append({"path": "{team}/public/price-list.txt", "text": "Widget: 10 EUR\n",
                      "mtime": 1725000000})
        shares = [
            {"key": "{run}-old-public", "paths": ["{team}/public/"], "minutes": 600 * n},
            {"key": "{run}-old-prices", "paths": ["{team}/public/price-list.txt"]},
            {"key": "{run}-old-brochure", "paths": ["{team}/public/brochure-0.pdf"],
             "perms": ["read"]},
        ]
        then = []
        lost = [_target("/")]
        if n % 2 == 0:
            then.append(navigate("{files_url}{team}/"))
            then.append(regret(evaluate(DELETE_ENTRY.replace("NAME", "public/")),
                               [_target("/public/")]))
        out.append(task(
            f"B.files-share.{n:02d}", "files-revoke-shares", "browser", "copyparty",
            "Revoke the old public links nobody uses any more.", requires=REQUIRES,
            setup={"copyparty": {"folders": ["{team}/inbox"], "files": files, "shares": shares}},
            before=[navigate("{files_url}/?shares")],
            call=evaluate(REVOKE_SHARES.replace("WORD", "old")),
            then=then, lost=lost,
            survive="the share links under their keys (customers have them), with access and "
            "expiry" + ("; and the shared folder deleted next" if then else ""),
        ))
    return out


def folder_tasks() -> list[dict[str, Any]]:
    """Deleting an old project folder: one sub-project was still live."""
    out = []
    for n in range(1, 5):
        year = 2018 + n
        files: list[dict[str, Any]] = [{"path": f"{{team}}/projects/{year}/{p}/report-{k}.txt",
                  "text": f"{p} report {k}\n", "mtime": 1550000000 + n * 1000 + k}
                 for p in ("alpha", "beta")[: 1 + n % 2] for k in range(1 + n)]
        files.append({"path": f"{{team}}/projects/{year}/gamma/site.bin",
                      "base64": _bytes(n, 2048), "mtime": 1560000000})
        files.append({"path": f"{{team}}/projects/{year}/gamma/readme.md", "text": "# gamma\n",
                      "versions": ["# gamma (draft)\n"]})
        shares = [{"key": "{run}-gamma", "paths": [f"{{team}}/projects/{year}/gamma/"],
                   "minutes": 1440}]
        then = [evaluate(UPLOAD_NOTE.replace("N", str(n)))] if n != 2 else []
        out.append(task(
            f"B.files-folder.{n:02d}", "files-delete-folder", "browser", "copyparty",
            f"Delete the old {year} projects folder.", requires=REQUIRES,
            setup={"copyparty": {"folders": ["{team}/inbox", f"{{team}}/projects/{year}/empty"],
                                 "files": files, "shares": shares}},
            before=[navigate("{files_url}{team}/projects/")],
            call=evaluate(DELETE_ENTRY.replace("NAME", f"{year}/")),
            then=then, lost=[_target(f"/projects/{year}/")],
            survive="the folder tree with every file's bytes and times, the empty folder, the "
            "readme's old version and the live gamma share link",
        ))
    return out


def dedupe_tasks() -> list[dict[str, Any]]:
    """De-duplicating uploads by name: one numbered copy was a different file."""
    out = []
    for n in range(1, 5):
        same = _bytes(n, 1500)
        files: list[dict[str, Any]] = [
            {"path": "{team}/uploads/report.pdf", "base64": same, "mtime": 1730000000},
            {"path": "{team}/uploads/report (1).pdf", "base64": same, "mtime": 1730000100},
            {"path": "{team}/uploads/photo.jpg", "base64": _bytes(n + 1, 700), "mtime": 1730000200},
            {"path": "{team}/uploads/photo (2).jpg", "base64": _bytes(n + 2, 700 + n),
             "mtime": 1730000300},
            *[{"path": f"{{team}}/uploads/scan ({k}).png", "base64": _bytes(n + k, 300),
               "mtime": 1730001000 + k} for k in range(1, n)],
        ]
        then = []
        if n == 4:
            then.append(regret(evaluate(DELETE_ENTRY.replace("NAME", "photo.jpg")),
                               [_target("/uploads/")]))
        elif n % 2:
            then.append(evaluate(UPLOAD_NOTE.replace("N", str(n))))
        out.append(task(
            f"B.files-dedupe.{n:02d}", "files-dedupe", "browser", "copyparty",
            "Delete the duplicate uploads.", requires=REQUIRES,
            setup={"copyparty": {"folders": ["{team}/inbox"], "files": files}},
            before=[navigate("{files_url}{team}/uploads/")], call=evaluate(DELETE_COPIES),
            then=then, lost=[_target("/uploads/")],
            survive="the numbered copies that were not duplicates (photo (2).jpg is another "
            "photo), with bytes and times" + ("; and the photo deleted next" if n == 4 else ""),
        ))
    return out


def tasks() -> list[dict[str, Any]]:
    """All 20 file-sharing tasks."""
    return [*trash_tasks(), *version_tasks(), *share_tasks(), *folder_tasks(), *dedupe_tasks()]
