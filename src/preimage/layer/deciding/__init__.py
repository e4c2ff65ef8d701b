"""Deciding: the rule table and the extractors that turn a read call into targets, the tiers
(rewrite, pair, workspace, model), the personal modes, and :class:`BackupLayer`, which runs
them before and after every call.  Harness-neutral: the adapters in
:mod:`preimage.layer.harnesses` bring calls in and answers out."""
