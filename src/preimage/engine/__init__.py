"""Capture, restore, undo, diff and score by backup ID: the Python API behind the command
line, a pipeline over the store.

* :mod:`.capture` — each target's connector captures into the store, one backup;
* :mod:`.restore` — select → check whole → undo backup → write → report;
* :mod:`.compare` — a backup against the live state (``diff``, ``score``);
* :mod:`.undo` — revert exactly what one call changed;
* :mod:`.trash` — the rewritten ``rm``: renames into the store's trash and back;
* :mod:`.backups`, :mod:`.resume` — what the stages share."""
