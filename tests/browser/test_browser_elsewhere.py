"""One origin's cookies, storages and IndexedDB restored into another Chromium profile."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

import preimage
from preimage import Store

from .conftest import seeded_tab

pytestmark = pytest.mark.browser


def test_origin_state_restores_into_another_profile(profile: Path, unsigned_profile: Path, shop_site: Any, store: Store) -> None:
    """The shop's cookies (every attribute), localStorage and IndexedDB restored into a
    profile that never visited it score 1.0 there, the profile reported as mapped."""
    seeded_tab(profile, shop_site)
    backup = preimage.capture([f"browser://{profile}?origin={shop_site.origin}"], store=store)
    dest = f"browser://{unsigned_profile}?origin={shop_site.origin}"
    result = preimage.restore_to(backup.id, f"browser://{unsigned_profile}", store=store)
    assert result.ok
    [mapped] = result.mappings[dest]
    assert (mapped.what, mapped.old, mapped.new) == ("profile", str(profile), str(unsigned_profile))
    total, _ = preimage.score_against(backup.id, dest, store=store)
    assert total.restorable.score == 1.0
    assert total.differences == [], total.differences
    with pytest.raises(preimage.UsageError, match="same origins"):
        preimage.restore_to(backup.id, f"browser://{unsigned_profile}?origin=http://other.test",
                            store=store)
