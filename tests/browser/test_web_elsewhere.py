"""isso comments restored into another isso instance (its own database, its own login),
through real Chromium."""

from __future__ import annotations

from pathlib import Path

import pytest

import preimage
from fixtures.isso import IssoServer, seed_thread
from preimage import Store

pytestmark = [pytest.mark.browser, pytest.mark.webapp]


def test_thread_restores_into_another_isso(isso_server: IssoServer, profile: Path, second_isso: tuple[IssoServer, Path], store: Store) -> None:
    """A thread's comments (nesting, authors, e-mails, websites, texts) re-created in an
    empty isso score 1.0 restorable against the backup, the instance reported as mapped;
    ids and vote counts are the new instance's (server class)."""
    thread = "/blog/elsewhere"
    seed_thread(isso_server, thread)
    other, other_profile = second_isso
    backup = preimage.capture([f"web+isso://127.0.0.1:{isso_server.port}{thread}?profile={profile}"],
                              store=store)
    dest = f"web+isso://127.0.0.1:{other.port}/?profile={other_profile}"
    result = preimage.restore_to(backup.id, dest, store=store)
    assert result.ok, [r.notes for r in result.reports]
    [moved] = result.mappings
    assert [(m.what, m.new) for m in result.mappings[moved]] == [
        ("instance", other.url)]
    total, _ = preimage.score_against(backup.id, moved, store=store)
    assert total.restorable.score == 1.0, [d for d in total.differences
                                           if d.fidelity in ("content", "metadata")]
