"""JavaScript run inside a page of the origin: read and write Web Storage and IndexedDB.

IndexedDB values are structured-clone values, not JSON.  They cross into
Python in a tagged encoding that keeps every type a structured clone can
hold: plain objects and arrays stay JSON objects and arrays, numbers and
strings stay themselves, and anything else becomes ``{"$t": type, ...}``:
``undefined``, non-finite numbers and ``-0``, ``bigint``, ``date``,
``regexp``, ``arraybuffer``, typed arrays and ``DataView`` (by constructor
name, bytes in base64), ``map``, ``set``, ``blob`` and ``file`` (bytes,
type, name, lastModified) and ``error``.  A plain object that itself has a
``$t`` property is wrapped as ``{"$t": "object", "v": {...}}``.  Keys use the
same encoding.

Key-generator positions of auto-increment stores are read by adding a probe
record in a transaction that is then aborted: the spec rolls an aborted
transaction's key-generator change back with it, so nothing is left behind.
"""

from __future__ import annotations

CODEC_JS = r"""
const b64 = (u8) => {
  let s = ''; const step = 0x8000;
  for (let i = 0; i < u8.length; i += step) s += String.fromCharCode.apply(null, u8.subarray(i, i + step));
  return btoa(s);
};
const unb64 = (s) => { const bin = atob(s); const u8 = new Uint8Array(bin.length);
  for (let i = 0; i < bin.length; i++) u8[i] = bin.charCodeAt(i); return u8; };
const blobReads = [];
const enc = (v) => {
  if (v === null || typeof v === 'boolean' || typeof v === 'string') return v;
  if (v === undefined) return {$t: 'undefined'};
  if (typeof v === 'number') {
    if (Number.isNaN(v)) return {$t: 'number', v: 'NaN'};
    if (!Number.isFinite(v)) return {$t: 'number', v: v > 0 ? 'Infinity' : '-Infinity'};
    if (v === 0 && 1 / v < 0) return {$t: 'number', v: '-0'};
    return v;
  }
  if (typeof v === 'bigint') return {$t: 'bigint', v: v.toString()};
  if (Array.isArray(v)) return v.map(enc);
  if (v instanceof Date) return {$t: 'date', v: Number.isNaN(v.getTime()) ? 'NaN' : v.getTime()};
  if (v instanceof RegExp) return {$t: 'regexp', source: v.source, flags: v.flags};
  if (v instanceof ArrayBuffer) return {$t: 'arraybuffer', v: b64(new Uint8Array(v))};
  if (ArrayBuffer.isView(v)) return {$t: v.constructor.name,
      v: b64(new Uint8Array(v.buffer, v.byteOffset, v.byteLength))};
  if (v instanceof Map) return {$t: 'map', v: Array.from(v.entries()).map(([a, b]) => [enc(a), enc(b)])};
  if (v instanceof Set) return {$t: 'set', v: Array.from(v.values()).map(enc)};
  if (v instanceof Blob) {
    const out = {$t: v instanceof File ? 'file' : 'blob', type: v.type, v: null};
    if (v instanceof File) { out.name = v.name; out.lastModified = v.lastModified; }
    blobReads.push(v.arrayBuffer().then((buf) => { out.v = b64(new Uint8Array(buf)); }));
    return out;
  }
  if (v instanceof Error) return {$t: 'error', name: v.name, message: v.message};
  const o = {};
  for (const k of Object.keys(v)) o[k] = enc(v[k]);
  return Object.prototype.hasOwnProperty.call(v, '$t') ? {$t: 'object', v: o} : o;
};
const TYPED = {Int8Array, Uint8Array, Uint8ClampedArray, Int16Array, Uint16Array, Int32Array,
  Uint32Array, Float32Array, Float64Array, BigInt64Array, BigUint64Array};
const dec = (v) => {
  if (v === null || typeof v !== 'object') return v;
  if (Array.isArray(v)) return v.map(dec);
  if (!Object.prototype.hasOwnProperty.call(v, '$t')) {
    const o = {}; for (const k of Object.keys(v)) o[k] = dec(v[k]); return o;
  }
  switch (v.$t) {
    case 'undefined': return undefined;
    case 'number': return v.v === '-0' ? -0 : Number(v.v);
    case 'bigint': return BigInt(v.v);
    case 'date': return new Date(v.v === 'NaN' ? NaN : v.v);
    case 'regexp': return new RegExp(v.source, v.flags);
    case 'arraybuffer': return unb64(v.v).buffer;
    case 'DataView': return new DataView(unb64(v.v).buffer);
    case 'map': return new Map(v.v.map(([a, b]) => [dec(a), dec(b)]));
    case 'set': return new Set(v.v.map(dec));
    case 'blob': return new Blob([unb64(v.v)], {type: v.type});
    case 'file': return new File([unb64(v.v)], v.name, {type: v.type, lastModified: v.lastModified});
    case 'error': { const e = new Error(v.message); e.name = v.name; return e; }
    case 'object': { const o = {}; for (const k of Object.keys(v.v)) o[k] = dec(v.v[k]); return o; }
    default:
      if (TYPED[v.$t]) return new TYPED[v.$t](unb64(v.v).buffer);
      throw new Error('unknown tagged value ' + v.$t);
  }
};
const req = (r) => new Promise((resolve, reject) => {
  r.onsuccess = () => resolve(r.result); r.onerror = () => reject(r.error);
});
const done = (tx) => new Promise((resolve, reject) => {
  tx.oncomplete = () => resolve(); tx.onerror = () => reject(tx.error);
  tx.onabort = () => reject(tx.error || new Error('transaction aborted'));
});
"""

CAPTURE_JS = (
    "async ({withSession}) => {\n"
    + CODEC_JS
    + r"""
const storage = (s) => { const out = {}; for (let i = 0; i < s.length; i++) { const k = s.key(i); out[k] = s.getItem(k); } return out; };
const result = {local: storage(localStorage), session: withSession ? storage(sessionStorage) : null, idb: []};
const names = await indexedDB.databases();
for (const info of names) {
  const db = await new Promise((resolve, reject) => {
    const r = indexedDB.open(info.name);
    r.onsuccess = () => resolve(r.result); r.onerror = () => reject(r.error);
    r.onupgradeneeded = () => { r.transaction.abort(); reject(new Error('database ' + info.name + ' vanished')); };
  });
  const entry = {name: db.name, version: db.version, stores: []};
  for (const storeName of Array.from(db.objectStoreNames)) {
    const tx = db.transaction(storeName, 'readonly');
    const store = tx.objectStore(storeName);
    const spec = {name: storeName, keyPath: store.keyPath, autoIncrement: store.autoIncrement,
      indexes: Array.from(store.indexNames).map((n) => { const ix = store.index(n);
        return {name: n, keyPath: ix.keyPath, unique: ix.unique, multiEntry: ix.multiEntry}; }),
      records: [], nextKey: null};
    await new Promise((resolve, reject) => {
      const c = store.openCursor();
      c.onsuccess = () => { const cur = c.result; if (!cur) { resolve(); return; }
        spec.records.push([enc(cur.primaryKey), enc(cur.value)]); cur.continue(); };
      c.onerror = () => reject(c.error);
    });
    await done(tx);
    if (store.autoIncrement) {
      const probe = db.transaction(storeName, 'readwrite');
      const ps = probe.objectStore(storeName);
      try { spec.nextKey = await req(ps.keyPath === null ? ps.add(0) : ps.add({})); } catch (e) { spec.nextKey = null; }
      try { probe.abort(); } catch (e) {}
    }
    entry.stores.push(spec);
  }
  db.close();
  result.idb.push(entry);
}
await Promise.all(blobReads);
return result;
}"""
)

# One database written as captured (``writeDb``): deleted first unless ``merge``, opened
# at its version with its stores and indexes, its records put back, key generators
# advanced to where they stood.  Shared by the whole-origin and the exact-key restores.
IDB_WRITE_JS = r"""
const deleteDb = (name) => new Promise((resolve, reject) => {
  const r = indexedDB.deleteDatabase(name);
  const timer = setTimeout(() => reject(new Error('database ' + name +
    ' is held open by another tab of this origin; close it and retry')), 10000);
  r.onsuccess = () => { clearTimeout(timer); resolve(); };
  r.onerror = () => { clearTimeout(timer); reject(r.error); };
});
const writeDb = async (d, merge) => {
  const live = (await indexedDB.databases()).find((x) => x.name === d.name);
  if (live && !merge) await deleteDb(d.name);
  const db = await new Promise((resolve, reject) => {
    const r = indexedDB.open(d.name, d.version);
    r.onupgradeneeded = () => {
      const db = r.result;
      for (const s of d.stores) {
        if (db.objectStoreNames.contains(s.name)) continue;
        const os = db.createObjectStore(s.name, {keyPath: s.keyPath, autoIncrement: s.autoIncrement});
        for (const ix of s.indexes) os.createIndex(ix.name, ix.keyPath, {unique: ix.unique, multiEntry: ix.multiEntry});
      }
    };
    r.onsuccess = () => resolve(r.result); r.onerror = () => reject(r.error);
  });
  for (const s of d.stores) {
    const tx = db.transaction(s.name, 'readwrite');
    const os = tx.objectStore(s.name);
    for (const [k, v] of s.records) {
      const key = dec(k), value = dec(v);
      if (merge) {
        const r = os.count(key);
        r.onsuccess = () => { if (r.result === 0) { if (os.keyPath === null) os.add(value, key); else os.add(value); } };
      } else if (os.keyPath === null) os.put(value, key); else os.put(value);
    }
    await done(tx);
    if (s.autoIncrement && s.nextKey !== null) {
      // Where does the key generator stand now?  Probe in a transaction that is aborted.
      // Only ever moved forward, so a merge may too: a key handed out before the capture
      // is not handed out again, and a generator the agent moved further stays.
      const p = db.transaction(s.name, 'readwrite');
      const ps = p.objectStore(s.name);
      const cur = await req(ps.keyPath === null ? ps.add(0) : ps.add({}));
      const aborted = new Promise((resolve) => { p.onabort = resolve; });
      p.abort();
      await aborted;
      if (cur < s.nextKey) {
        // Advance it to where it stood at capture: write the key just below, then delete it.
        const below = s.nextKey - 1;
        const tx2 = db.transaction(s.name, 'readwrite');
        const os2 = tx2.objectStore(s.name);
        if (os2.keyPath === null) os2.add(0, below);
        else { const probe = {}; let o = probe; const parts = String(os2.keyPath).split('.');
               for (let i = 0; i < parts.length - 1; i++) { o[parts[i]] = {}; o = o[parts[i]]; }
               o[parts[parts.length - 1]] = below; os2.add(probe); }
        os2.delete(below);
        await done(tx2);
      }
    }
  }
  db.close();
};
"""

RESTORE_JS = (
    "async ({local, session, idb, merge}) => {\n"
    + CODEC_JS
    + IDB_WRITE_JS
    + r"""
const put = (s, entries) => { if (!merge) s.clear();
  for (const [k, v] of Object.entries(entries)) { if (!merge || s.getItem(k) === null) s.setItem(k, v); } };
if (local !== null) put(localStorage, local);
if (session !== null) put(sessionStorage, session);
if (idb === null) return true;
const wanted = new Set(idb.map((d) => d.name));
if (!merge) for (const info of await indexedDB.databases()) if (!wanted.has(info.name)) await deleteDb(info.name);
for (const d of idb) await writeDb(d, merge);
return true;
}"""
)

# Exact keys (an undo): storage entries set or removed one by one, databases dropped or
# rebuilt whole (their structure changed), records put or deleted one by one — nothing
# else of the origin is touched.
RESTORE_KEYS_JS = (
    "async ({local, session, drop, rebuild, records}) => {\n"
    + CODEC_JS
    + IDB_WRITE_JS
    + r"""
const apply = (s, w) => { for (const [k, v] of Object.entries(w.set)) s.setItem(k, v);
  for (const k of w.remove) s.removeItem(k); };
if (local !== null) apply(localStorage, local);
if (session !== null) apply(sessionStorage, session);
for (const name of drop) {
  if ((await indexedDB.databases()).some((x) => x.name === name)) await deleteDb(name);
}
for (const d of rebuild) await writeDb(d, false);
for (const w of records) {
  if (!(await indexedDB.databases()).some((x) => x.name === w.database))
    throw new Error('IndexedDB database ' + w.database + ' is gone; restore the whole origin');
  const db = await new Promise((resolve, reject) => {
    const r = indexedDB.open(w.database);
    r.onsuccess = () => resolve(r.result); r.onerror = () => reject(r.error);
  });
  try {
    if (!db.objectStoreNames.contains(w.store))
      throw new Error('object store ' + w.database + '/' + w.store + ' is gone; restore the whole origin');
    const tx = db.transaction(w.store, 'readwrite');
    const os = tx.objectStore(w.store);
    for (const k of w.remove) os.delete(dec(k));
    for (const [k, v] of w.put) { if (os.keyPath === null) os.put(dec(v), dec(k)); else os.put(dec(v)); }
    await done(tx);
  } finally { db.close(); }
}
return true;
}"""
)
