"""Capture and restore time of the browser connectors, against real Chromium and real isso.

    python benchmarks/bench_browser.py [--comments 1000] [--idb-mb 10] [--files 500]
                                       [--only isso|idb|copyparty]

1. an isso thread with N comments (a tenth of them replies): capture, delete
   all, restore — through web+isso;
2. a profile whose origin holds ~M MB of IndexedDB records: capture, clear,
   restore — through browser://;
3. a copyparty folder with F files of 20 KiB random bytes in 10 sub-folders, a
   tenth of them text files with an old version, and a share link: capture, delete
   the folder and its link, restore — through web+copyparty; beside it, copyparty's
   own zip download of the folder (``?zip``), what a user would otherwise keep.
Prints seconds and bytes; asserts nothing.
"""

from __future__ import annotations

import argparse
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(Path(__file__).resolve().parent))

import _common  # noqa: E402

sys.path.insert(0, str(ROOT))

import preimage  # noqa: E402
from fixtures.copyparty import CopypartyServer  # noqa: E402
from fixtures.copyparty import sign_in as copyparty_sign_in  # noqa: E402
from fixtures.isso import ADMIN_PASSWORD, IssoServer  # noqa: E402
from preimage import Store  # noqa: E402
from preimage.connectors.browser import browser_context  # noqa: E402


def bench_comments(n: int, tmp: Path, profile: Path) -> None:
    with IssoServer(tmp / "isso") as srv:
        ids: list[int] = []
        for i in range(n):
            parent = ids[i // 10 * 10 - 1] if i % 10 == 9 and i >= 10 else None
            ids.append(srv.post("/bench", f"comment number {i} " + "lorem ipsum " * 5,
                                author=f"user{i % 37}", email=f"u{i % 37}@example.org",
                                parent=parent, title="Bench")["id"])
        page = browser_context(profile).new_page()
        page.goto(srv.url + "/admin/")
        page.fill("input[type=password]", ADMIN_PASSWORD)
        page.press("input[type=password]", "Enter")
        page.wait_for_selector("#isso-root", state="attached")
        page.close()
        store = Store(tmp / "home-comments")
        uri = f"web+isso://127.0.0.1:{srv.port}/bench?profile={profile}"
        t = time.perf_counter()
        backup = preimage.capture([uri], store=store)
        cap = time.perf_counter() - t
        import sqlite3

        con = sqlite3.connect(srv.db)
        con.execute("DELETE FROM comments")  # the whole thread is gone
        con.commit()
        con.close()
        rest, result, score = _common.timed_restore(backup.id, store)
        print(f"isso {n} comments: capture {cap:.1f} s, restore {rest:.1f} s "
              f"(incl. undo capture and read-back), stored {backup.stored_bytes} B, "
              f"ok={result.ok}, content={score.classes['content'].text(3)} "
              f"metadata={score.classes['metadata'].text(3)}")


def bench_idb(mb: int, tmp: Path, profile: Path) -> None:
    origin = "http://127.0.0.1:9"  # never contacted: preimage serves the tab itself
    ctx = browser_context(profile)
    page = ctx.new_page()
    page.route(origin + "/**", lambda r: r.fulfill(status=200, content_type="text/html", body="x"))
    page.goto(origin + "/")
    page.evaluate("""async (mb) => {
      const o = indexedDB.open('big', 1);
      o.onupgradeneeded = () => o.result.createObjectStore('docs', {autoIncrement: true});
      const db = await new Promise((ok) => { o.onsuccess = () => ok(o.result); });
      // ~10 KiB of random text per record, so compression does not flatter the store.
      const text = () => btoa(String.fromCharCode(...crypto.getRandomValues(new Uint8Array(7680))));
      for (let b = 0; b < mb; b++) {
        const tx = db.transaction('docs', 'readwrite');
        for (let i = 0; i < 100; i++) tx.objectStore('docs').add({i, body: text()});
        await new Promise((ok) => { tx.oncomplete = ok; });
      }
      db.close();
    }""", mb)
    page.close()
    store = Store(tmp / "home-idb")
    uri = f"browser://{profile}?origin={origin}"
    t = time.perf_counter()
    backup = preimage.capture([uri], store=store)
    cap = time.perf_counter() - t
    page = ctx.new_page()
    page.route(origin + "/**", lambda r: r.fulfill(status=200, content_type="text/html", body="x"))
    page.goto(origin + "/")
    page.evaluate("() => new Promise((ok) => { indexedDB.deleteDatabase('big').onsuccess = ok; })")
    page.close()
    rest, result, score = _common.timed_restore(backup.id, store)
    print(f"IndexedDB ~{mb} MB ({mb * 100} records): capture {cap:.1f} s, restore {rest:.1f} s "
          f"(incl. undo capture), logical {backup.logical_bytes / 1e6:.1f} MB, "
          f"stored {backup.stored_bytes / 1e6:.2f} MB, ok={result.ok}, "
          f"content={score.classes['content'].text(3)} "
          f"metadata={score.classes['metadata'].text(3)}")


def bench_copyparty(n: int, tmp: Path, profile: Path) -> None:
    import base64
    import os

    with CopypartyServer(tmp / "copyparty") as srv:
        files = []
        for i in range(n):
            path = f"/bench/d{i % 10}/f{i}"
            if i % 10 == 0:
                files.append({"path": path + ".md", "text": f"text {i}\n" * 500,
                              "versions": [f"draft {i}\n" * 400]})
            else:
                files.append({"path": path + ".bin",
                              "base64": base64.b64encode(os.urandom(20480)).decode(),
                              "mtime": 1700000000 + i})
        srv.seed({"files": files, "shares": [{"key": "bench", "paths": ["/bench/d1/"]}]})
        page = browser_context(profile).new_page()
        copyparty_sign_in(page, srv.url)
        page.close()
        t = time.perf_counter()
        status, body = srv.request("GET", "/bench/?zip")
        zipped = time.perf_counter() - t
        store = Store(tmp / "home-copyparty")
        uri = f"web+copyparty://127.0.0.1:{srv.port}/bench/?profile={profile}"
        t = time.perf_counter()
        backup = preimage.capture([uri], store=store)
        cap = time.perf_counter() - t
        srv.request("POST", "/?eshare=rm&skey=bench")
        srv.delete("/bench")
        rest, result, score = _common.timed_restore(backup.id, store)
        print(f"copyparty {n} files (20 KiB, a tenth with a version) and a share: capture "
              f"{cap:.1f} s (copyparty's zip download: {zipped:.1f} s, HTTP {status}, "
              f"{len(body) / 1e6:.1f} MB; ratio {cap / zipped:.1f}x), restore {rest:.1f} s "
              f"(incl. undo capture and read-back), logical {backup.logical_bytes / 1e6:.1f} MB, "
              f"stored {backup.stored_bytes / 1e6:.2f} MB, ok={result.ok}, "
              f"content={score.classes['content'].text(3)} "
              f"metadata={score.classes['metadata'].text(3)}")


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--comments", type=int, default=1000)
    ap.add_argument("--idb-mb", type=int, default=10)
    ap.add_argument("--files", type=int, default=500)
    ap.add_argument("--only", choices=("isso", "idb", "copyparty"))
    args = ap.parse_args()
    with tempfile.TemporaryDirectory() as d:
        tmp = Path(d)
        profile = tmp / "profile"
        profile.mkdir()
        if args.only in (None, "idb"):
            bench_idb(args.idb_mb, tmp, profile)
        if args.only in (None, "isso"):
            bench_comments(args.comments, tmp, profile)
        if args.only in (None, "copyparty"):
            bench_copyparty(args.files, tmp, profile)


if __name__ == "__main__":
    main()
