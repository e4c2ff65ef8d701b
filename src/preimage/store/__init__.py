"""The store: where backups live and how long.

The embedded default (:mod:`.store`: local blobs and a SQLite catalog) and the shared one
(:mod:`.remote`: packs on S3-compatible storage, catalog in PostgreSQL), behind one backend
interface (:mod:`.backend`); the format and its upgrades, snapshot documents, and the
lifecycle: ``check``, ``forget``/``prune``, retention and quota, ``stats``,
``export``/``import``, ``copy``.  It knows connectors only through the registry."""
