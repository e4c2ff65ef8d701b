"""Small errors said right: what a damaged backup means for diff and score, a catalog
that cannot be written, a URI with a stray percent sign."""

from __future__ import annotations

import shutil
import subprocess
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

import preimage
from preimage import Store

CliResult = subprocess.CompletedProcess[str]


def _tree(root: Path) -> Path:
    root.mkdir()
    (root / "f").write_text("data\n" * 100)
    return root


def test_diff_and_score_of_a_damaged_backup_say_it_cannot_be_compared(
    tmp_path: Path, store: Store, cli: Callable[..., CliResult]
) -> None:
    """A missing blob: diff and score name it and say the backup cannot be compared, not that it cannot be restored."""
    root = _tree(tmp_path / "t")
    backup = preimage.capture([f"file://{root}"], store=store)
    row = store.catalog.get(backup.id).snapshots[0]
    store.blobs.path(row.digest).unlink()
    for command in ("diff", "score"):
        res = cli(command, backup.id)
        assert res.returncode != 0
        assert "cannot be compared" in res.stderr and "restored" not in res.stderr, res.stderr


@pytest.fixture
def immutable_catalog(home: Path, store: Store) -> Iterator[Path]:
    """The store's catalog file made immutable (chattr +i: not even root may write it)."""
    catalog = home / "catalog.sqlite"
    store.close()
    if shutil.which("chattr") is None:
        pytest.fail("chattr (e2fsprogs) is needed to make a file read-only for root")
    made = subprocess.run(["chattr", "+i", str(catalog)], capture_output=True, text=True)
    if made.returncode != 0:
        pytest.fail(f"chattr +i failed here ({made.stderr.strip()}); this test needs a "
                    "filesystem with the immutable flag (ext4, xfs, btrfs, overlay on one)")
    try:
        yield catalog
    finally:
        subprocess.run(["chattr", "-i", str(catalog)], check=True)


def test_a_catalog_that_cannot_be_written_is_one_line_not_an_unexpected_error(
    tmp_path: Path, immutable_catalog: Path, cli: Callable[..., CliResult]
) -> None:
    """capture and forget against an immutable catalog: exit 2, one line naming the catalog."""
    root = _tree(tmp_path / "t")
    for args in (("capture", f"file://{root}"), ("quota", "--max-size", "1GiB")):
        res = cli(*args)
        assert res.returncode == 2
        assert "unexpected error" not in res.stderr and "Traceback" not in res.stderr
        assert "catalog" in res.stderr and "readonly" in res.stderr
        assert len(res.stderr.strip().splitlines()) == 1


@pytest.mark.parametrize("uri", ["file:///tmp/%ZZ", "file:///tmp/100%", "file:///tmp/%4"])
def test_a_stray_percent_sign_in_a_uri_is_refused(
    uri: str, cli: Callable[..., CliResult]
) -> None:
    """A % that starts no escape is refused with the fix, not read as a literal path."""
    res = cli("capture", uri)
    assert res.returncode == 2
    assert "%25" in res.stderr and "Traceback" not in res.stderr
