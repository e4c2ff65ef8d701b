"""Reading calls: the shell grammar (words, expansions, wrappers, bashlex), option parsing,
SQL text and catalogs, mounts and URIs.  Parsers only: what a call says, not what to do
about it (that is :mod:`preimage.layer.deciding`)."""
