"""Site adapter for copyparty, the file-sharing server (``web+copyparty://host:port/FOLDER/``).

The target's path is a folder: the records are that folder, every folder and
file under it (dotfiles too: old versions live in ``.hist`` folders) and every
share link whose source is in it; ``/`` is the whole server.  The browser
profile must be signed in to copyparty with an account that may read, see
dotfiles and, for a restore, write and delete there; reading shares of other
accounts needs the share admin (``--shr-adm``).  copyparty does not say whether an
account is the share admin: unless the share table shows a share of another account
(which only the share admin sees), the capture records "shares of other accounts" as
uncaptured (``?shares=own`` narrows the target to the account's own shares instead).

Reading goes through copyparty's own views from inside the profile:

* the JSON listing ``FOLDER/?ls&dots`` — sub-folders and files with size,
  modification time (seconds), and the upload database's tags (who uploaded a
  file, when, from which address, and copyparty's content hash);
* each file's bytes, kept base64-encoded with their SHA-256: the folder as one
  uncompressed zip from copyparty's own download (``?zip=crc``), a file the zip
  lacks by its own ``GET``;
* the share table ``/?shares`` — key, source folder, the files shared from it,
  access letters, owner, whether a password is set, created and expiry times.

copyparty keeps old versions of a text file saved through its editor in a
``.hist`` folder beside it (``--md-hist s``), named ``NAME.LASTMOD.EXT``; they
are records of kind ``version``, and come back as files in that folder.
copyparty has no trash: a team's trash is a folder it moves files into, and
its records are files like any other.

Writing uses copyparty's HTTP API (never its folders on disk):

* a folder: ``MKCOL``, level by level;
* a file or version: ``PUT`` with its bytes and ``X-OC-MTime`` (copyparty
  sets the file's modification time from it); a changed file is deleted and
  put again, since copyparty's ``PUT`` never overwrites (it saves beside);
* a share: ``POST ?share`` with the same key — so the captured link works
  again — the same source, files and access, and the minutes it had left;
* delete: ``POST ?delete`` (a folder with everything in it) and
  ``?eshare=rm`` for a share.

What comes back, by field:

* content — a file's bytes (``data``, with ``size`` and ``sha256``); a
  share's source folder and files;
* metadata — a file's modification time; a share's access, owner, whether it
  expires and whether it has a password;
* server — a folder's time (the filesystem stamps it when its entries
  change), who uploaded a file, when and from where (copyparty records the
  request that uploads), its content hash in copyparty's index, a share's
  created and expiry times (copyparty stamps the request's time; a restore
  asks for the minutes that were left).

Refused, failing closed: a share with a password (copyparty keeps only its
hash, so re-creating it would publish the files without one) and a share of
another account (a share belongs to the account that creates it).
"""

from __future__ import annotations

import base64
import hashlib
import io
import math
import time
import zipfile
from collections.abc import Mapping, Sequence
from typing import Any, ClassVar
from urllib.parse import quote, unquote

from preimage.connectors.web.adapter import (
    LoginRequiredError,
    RecordRefusedError,
    Refs,
    Site,
    SiteAdapter,
)
from preimage.interface.errors import TransientConnectorError
from preimage.snapshot_schemas import Uncaptured
from preimage.snapshot_schemas.web import WebRecord

VERSIONS_FOLDER = ".hist"
_ACCESS = {"r": "read", "w": "write", "g": "get", ".": "dot"}

# The share table of ``/?shares`` as the server wrote it (parsed, not run: the page's
# script rewrites the times for display), by its column headers.
_SHARES_JS = """(html) => {
  const doc = new DOMParser().parseFromString(html, 'text/html');
  const table = doc.querySelector('table#tab');
  if (!table) return null;
  const heads = Array.from(table.querySelectorAll('thead th')).map((th) => th.textContent.trim());
  return Array.from(table.querySelectorAll('tbody tr')).map((tr) => {
    const cells = Array.from(tr.children);
    const row = {};
    heads.forEach((h, i) => {
      const td = cells[i]; if (!td) return;
      if (h === 'sharekey') { const a = td.querySelectorAll('a'); row[h] = a.length ?
        a[a.length - 1].textContent.trim() : td.textContent.trim(); }
      else if (h === 'source') { const a = td.querySelector('a');
        row[h] = a ? a.getAttribute('href') : td.textContent.trim(); }
      else if (h === 'nf') { row[h] = td.innerHTML.replace(/<\\/?div>/g, '')
        .split(/<br\\s*\\/?>/).map((s) => { const e = document.createElement('i');
          e.innerHTML = s; return e.textContent.trim(); }).filter((s) => s && s !== '---'); }
      else row[h] = td.textContent.trim();
    });
    return row;
  });
}"""


def _get(site: Site, path: str) -> tuple[int, bytes]:
    """``GET`` a path with the profile's logins, the bytes straight to this process (the
    browser context's request client: a file's bytes never pass through the page's
    JavaScript as text, which costs seconds per ten megabytes)."""
    from playwright.sync_api import Error as PlaywrightError

    url = site.url(path)
    try:
        resp = site.page.request.get(url)
    except PlaywrightError as exc:
        raise TransientConnectorError(
            f"GET {url} failed: {str(exc).splitlines()[0]} — is copyparty running?",
            target=url) from exc
    if resp.status >= 500:
        raise TransientConnectorError(f"GET {url} answered HTTP {resp.status}", target=url)
    return resp.status, resp.body()


def _folder(path: str) -> str:
    """``path`` as a folder name: a leading and a trailing slash."""
    inner = "/".join(p for p in path.split("/") if p)
    return f"/{inner}/" if inner else "/"


def _parent(path: str) -> str:
    """The folder a file or folder name is in."""
    return _folder(path.rstrip("/").rpartition("/")[0])


class CopypartyAdapter(SiteAdapter):
    """copyparty folders, files, their versions and share links (see the module docstring)."""

    name: ClassVar[str] = "copyparty"
    channel: ClassVar[str] = "copyparty HTTP API: MKCOL, PUT with X-OC-MTime, ?share, ?delete"
    server_reasons: ClassVar[dict[str, str]] = {
        "folder.time": "the filesystem stamps a folder's time when its entries change; "
                       "no copyparty API sets it",
        "file.uploaded_by": "copyparty records the account that uploads; a restore uploads "
                            "as the profile's account",
        "file.uploaded_at": "copyparty stamps the time of the upload request",
        "file.uploaded_from": "copyparty records the address of the upload request",
        "file.index_hash": "copyparty's index derives it from the bytes and the upload",
        "version.uploaded_by": "copyparty records the account that uploads",
        "version.uploaded_at": "copyparty stamps the time of the upload request",
        "version.uploaded_from": "copyparty records the address of the upload request",
        "version.index_hash": "copyparty's index derives it from the bytes and the upload",
        "share.created": "copyparty stamps the time of the request that creates a share",
        "share.expires": "copyparty sets the expiry as minutes from the creating request; a "
                         "restore asks for the minutes that were left, rounded up",
    }

    # ------------------------------------------------------------------ reading
    def location_of(self, path: str, query: Mapping[str, list[str]]) -> str | None:
        """The folder a page shows or acts on: a folder's page is that folder, a file's is
        the folder it is in (its versions live there too), and the share table
        (``/?shares``) or a share's page acts on shares of any folder: ``/``."""
        if "shares" in query or "eshare" in query or path.startswith("/share/"):
            return "/"
        if not path or path.endswith("/"):
            return _folder(path or "/")
        return _parent(path)

    def records(self, site: Site) -> list[WebRecord]:
        """The folder, everything under it, and the shares whose source is in it."""
        root = _folder(unquote(site.location))
        listings = self._walk(site, root)
        folders = [WebRecord(kind="folder", name=path, server={"time": ts})
                   for path, (ts, _) in sorted(listings.items())]
        entries = [(path + f["href"], f) for path, (_, files) in sorted(listings.items())
                   for f in files]
        datas = self._read(site, root, [p for p, _ in entries])
        files = [self._file_record(path, f, data)
                 for (path, f), data in zip(entries, datas, strict=True)]
        table = self._shares(site)
        self._audit_shares(site, root, table)
        shares = [s for s in table if s.content["source"].startswith(root)]
        return [*folders, *files, *shares]

    def _audit_shares(self, site: Site, root: str, table: Sequence[WebRecord]) -> None:
        """Record the shares of other accounts as uncaptured unless the share table shows
        the profile's account sees them.

        copyparty shows an account only its own shares unless it is the share admin
        (``--shr-adm``), and no view says whether it is one: a row owned by another account
        proves it (only the share admin is shown such rows); a table of the account's own
        shares alone proves nothing, since another account's share in the folder would be
        missing from it just the same.  ``?shares=own`` narrows the target to the account's
        own shares, said in the snapshot's notes.
        """
        account = self._account(site)
        if site.params.get("shares") == "own":
            site.notes.append(f"shares=own: the target holds the shares of {account!r} only; "
                              "other accounts' shares from this folder are outside it")
            return
        if any(s.metadata.get("owner") != account for s in table):
            return
        site.uncaptured.append(Uncaptured(
            kind="share", name=f"shares from {root} of accounts other than {account!r}",
            reason=f"copyparty shows {account!r} only its own shares unless it is the share "
                   "admin (--shr-adm), and its share table held no other account's share, so "
                   "the capture cannot show it saw them all — sign the profile in as the share "
                   "admin, or add ?shares=own to the target to leave other accounts' shares "
                   "out of it"))

    def _listing(self, site: Site, folder: str) -> dict[str, Any] | None:
        resp = site.fetch(quote(folder) + "?ls&dots")
        if resp.status == 404:
            return None
        if resp.status in (401, 403) and self._account(site) == "*":
            raise LoginRequiredError(self.name, site.url(folder), str(site.profile),
                                     "open copyparty and log in with the account's password")
        if resp.status != 200:
            raise RecordRefusedError(self.name, folder, f"?ls answered HTTP {resp.status}")
        data: dict[str, Any] = resp.json()
        if data.get("acct") == "*":
            raise LoginRequiredError(self.name, site.url(folder), str(site.profile),
                                     "open copyparty and log in with the account's password")
        if "dot" not in data.get("perms", []):
            raise RecordRefusedError(
                self.name, folder, f"the account {data.get('acct')!r} may not see dotfiles here, "
                "so old versions (.hist) would go uncaptured — give it the '.' permission")
        return data

    def _walk(self, site: Site, root: str) -> dict[str, tuple[int | None, list[dict[str, Any]]]]:
        """Folder → (its time, its files), for ``root`` and every folder under it."""
        top = self._listing(site, root)
        if top is None:
            return {}
        parent = self._listing(site, _parent(root)) if root != "/" else None
        root_ts = next((d["ts"] for d in (parent or {}).get("dirs", [])
                        if _folder(_parent(root) + unquote(d["href"])) == root), None)
        out: dict[str, tuple[int | None, list[dict[str, Any]]]] = {}
        todo: list[tuple[str, int | None, dict[str, Any]]] = [(root, root_ts, top)]
        while todo:
            path, ts, data = todo.pop()
            out[path] = (ts, [dict(f, href=unquote(f["href"])) for f in data.get("files", [])])
            subs = [(path + unquote(d["href"]).rstrip("/") + "/", d["ts"])
                    for d in data.get("dirs", [])]
            if not subs:
                continue
            answers = site.fetch_all([quote(p) + "?ls&dots" for p, _ in subs])
            for (sub, sub_ts), resp in zip(subs, answers, strict=True):
                if resp.status == 404:  # deleted since its parent was listed
                    continue
                if resp.status != 200:  # never skipped: what is under it would go unseen
                    raise RecordRefusedError(self.name, sub, f"?ls answered HTTP {resp.status}; "
                                             "the folder cannot be captured")
                todo.append((sub, sub_ts, resp.json()))
        return out

    def _read(self, site: Site, root: str, paths: Sequence[str]) -> list[str]:
        """Every file's bytes, base64-encoded: the folder as one uncompressed zip from
        copyparty's own download (``?zip=crc``, dotfiles included), and any file the zip
        does not hold (written in between) by its own request."""
        if not paths:
            return []
        got = self._zipped(site, root)
        for path in paths:
            if path not in got:
                status, body = _get(site, quote(path))
                if status != 200:
                    raise RecordRefusedError(self.name, path, f"reading it answered HTTP {status}")
                got[path] = base64.b64encode(body).decode()
        return [got[p] for p in paths]

    @staticmethod
    def _zipped(site: Site, root: str) -> dict[str, str]:
        """Path → base64 bytes of every file in copyparty's zip of ``root``."""
        status, body = _get(site, quote(root) + "?zip=crc")
        if status != 200:
            return {}
        # the zip names entries from the folder's own name down (nothing above it)
        above = _parent(root) if root != "/" else "/"
        files: dict[str, str] = {}
        with zipfile.ZipFile(io.BytesIO(body)) as archive:
            for info in archive.infolist():
                if not info.is_dir():
                    files[above + info.filename] = base64.b64encode(
                        archive.read(info)).decode()
        return files

    @staticmethod
    def _file_record(path: str, entry: dict[str, Any], data: str) -> WebRecord:
        raw = base64.b64decode(data)
        tags = entry.get("tags") or {}
        kind = "version" if f"/{VERSIONS_FOLDER}/" in path else "file"
        return WebRecord(
            kind=kind, name=path,
            content={"data": data, "size": len(raw), "sha256": hashlib.sha256(raw).hexdigest()},
            metadata={"mtime": entry.get("ts")},
            server={"uploaded_by": tags.get("up_by"), "uploaded_at": tags.get(".up_at"),
                    "uploaded_from": tags.get("up_ip"), "index_hash": tags.get("w")},
        )

    def _shares(self, site: Site) -> list[WebRecord]:
        resp = site.fetch("/?shares")
        rows = site.page.evaluate(_SHARES_JS, resp.text)
        if rows is None:
            if "not logged in" in resp.text:
                raise LoginRequiredError(self.name, site.url("/?shares"), str(site.profile),
                                         "log in to copyparty first")
            raise self.selector_error("table#tab", resp.url, "the share table is missing")
        out = []
        for row in rows:
            missing = [h for h in ("sharekey", "source", "axs", "nf", "user", "pw", "created",
                                   "expires") if h not in row]
            if missing:
                raise self.selector_error(f"table#tab th:{missing[0]}", resp.url,
                                          "a column of the share table is gone")
            expires = int(float(row["expires"] or 0))
            out.append(WebRecord(
                kind="share", name=row["sharekey"],
                content={"source": _folder(unquote(row["source"])), "files": sorted(row["nf"])},
                metadata={"access": row["axs"], "owner": row["user"],
                          "expiring": expires > 0, "password": row["pw"] not in ("", "--")},
                server={"created": int(float(row["created"] or 0)), "expires": expires},
            ))
        return out

    # ------------------------------------------------------------------ writing
    def depends_on(self, record: WebRecord) -> list[str]:
        """A folder or file needs the folder it is in; a share its source and its files."""
        if record.kind == "share":
            source = record.content["source"]
            return [f"folder:{source}", *(f"file:{source}{f}" for f in record.content["files"])]
        if record.name == "/":
            return []
        return [f"folder:{_parent(record.name)}"]

    def create_many(
        self, site: Site, records: Sequence[WebRecord], refs: Refs
    ) -> list[dict[str, Any] | RecordRefusedError]:
        """Folders one level at a time, files and versions by ``PUT``, shares one by one."""
        out: dict[int, dict[str, Any] | RecordRefusedError] = {}
        puts = []
        for i, rec in enumerate(records):
            outside = self._outside(site, rec)
            if outside is not None:
                out[i] = outside
            elif rec.kind == "folder":
                out[i] = self._mkdir(site, rec)
            elif rec.kind == "share":
                out[i] = self._share(site, rec)
            else:
                puts.append(i)
        for i in puts:
            out[i] = self._put(site, records[i])
        return [out[i] for i in range(len(records))]

    def _put(self, site: Site, rec: WebRecord) -> dict[str, Any] | RecordRefusedError:
        """``PUT`` one file's bytes with its time, from this process through the browser
        context's request client (the profile's logins; the bytes never pass through the
        page's JavaScript as text)."""
        from playwright.sync_api import Error as PlaywrightError

        url = site.url(quote(rec.name))
        mtime = rec.metadata.get("mtime")
        try:
            resp = site.page.request.put(
                url, data=base64.b64decode(rec.content["data"]),
                headers={"X-OC-MTime": str(mtime)} if mtime is not None else {})
        except PlaywrightError as exc:
            raise TransientConnectorError(
                f"PUT {url} failed: {str(exc).splitlines()[0]} — is copyparty running?",
                target=url) from exc
        if resp.status in (200, 201):
            return {}
        return RecordRefusedError(self.name, rec.ref,
                                  f"PUT answered HTTP {resp.status}: {resp.text()[:300].strip()}")

    def create(self, site: Site, record: WebRecord, refs: Refs) -> dict[str, Any]:
        """Re-create one record (see :meth:`create_many`)."""
        result = self.create_many(site, [record], refs)[0]
        if isinstance(result, RecordRefusedError):
            raise result
        return result

    def _mkdir(self, site: Site, rec: WebRecord) -> dict[str, Any] | RecordRefusedError:
        parts = [p for p in rec.name.split("/") if p]
        for n in range(1, len(parts) + 1):
            resp = site.fetch(quote("/" + "/".join(parts[:n]) + "/"), method="MKCOL")
            if resp.status >= 300 and resp.status != 405:  # 405: there already
                return RecordRefusedError(self.name, rec.ref,
                                          f"MKCOL answered HTTP {resp.status}: {resp.text[:200]}")
        return {}

    def _share(self, site: Site, rec: WebRecord) -> dict[str, Any] | RecordRefusedError:
        meta, source = rec.metadata, rec.content["source"]
        if meta.get("password"):
            return RecordRefusedError(
                self.name, rec.ref, "the share had a password, which copyparty keeps only as a "
                "hash; re-created without it the files would be public — create it again with "
                "its password")
        account = self._account(site)
        if meta.get("owner") != account:
            return RecordRefusedError(
                self.name, rec.ref, f"the share belonged to {meta.get('owner')!r} and a share "
                f"belongs to the account that creates it (the profile is {account!r}) — restore "
                "it from a profile signed in as its owner")
        minutes = ""
        if meta.get("expiring"):
            left = (int(rec.server.get("expires") or 0) - time.time()) / 60
            minutes = str(max(1, math.ceil(left)))
        files = rec.content["files"]
        vps = [source + f for f in files] if files else [source]
        perms = [_ACCESS[c] for c in str(meta.get("access", "")) if c in _ACCESS]
        resp = site.fetch(quote(source) + "?share", method="POST",
                          body={"k": rec.name, "vp": vps, "pw": "", "exp": minutes,
                                "perms": perms})
        if resp.status not in (200, 201) or "created share" not in resp.text:
            return RecordRefusedError(self.name, rec.ref,
                                      f"?share answered HTTP {resp.status}: {resp.text[:200]}")
        return {}

    def _account(self, site: Site) -> str:
        resp = site.fetch("/?ls")
        return str(resp.json().get("acct", "*")) if resp.status == 200 else "*"

    def update(self, site: Site, live: WebRecord, want: WebRecord, refs: Refs) -> bool:
        """A folder has nothing a client sets; anything else is deleted and re-created."""
        return want.kind == "folder"

    def _outside(self, site: Site, rec: WebRecord) -> RecordRefusedError | None:
        """A refusal for a record that is not under the target's folder (a snapshot edited
        by hand, or restored to another location): a restore writes inside its target only."""
        root = _folder(unquote(site.location))
        path = rec.content.get("source", "") if rec.kind == "share" else rec.name
        parts = path.split("/")
        if path.startswith(root) and ".." not in parts and "." not in parts:
            return None
        return RecordRefusedError(self.name, rec.ref,
                                  f"{path!r} is not inside the target's folder {root!r}")

    def delete(self, site: Site, live: WebRecord) -> None:
        """Delete a file, a version, a folder with what is in it, or a share."""
        outside = self._outside(site, live)
        if outside is not None:
            raise outside
        if live.kind == "share":
            resp = site.fetch(f"/?eshare=rm&skey={quote(live.name)}", method="POST")
            ok = resp.status in (200, 302)
        else:
            resp = site.fetch(quote(live.name.rstrip("/") if live.kind != "folder"
                                    else live.name) + "?delete", method="POST")
            ok = resp.status in {200, 404}
        if not ok:
            raise RecordRefusedError(self.name, live.ref,
                                     f"delete answered HTTP {resp.status}: {resp.text[:200]}")
