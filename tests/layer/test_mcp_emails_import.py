"""Which folders emails-mcp's `import_emails` appends to, read from its file as the server
reads it (the server's source: tools/management_tools.py, backends/file_backend.py)."""

from __future__ import annotations

import json
from pathlib import Path

from preimage.layer.deciding.mcp_emails import import_folders


def export(path: Path, folders: list[str | None]) -> None:
    path.write_text(json.dumps({"export_date": "2026-01-01T00:00:00", "emails": [
        {"email_id": str(i), "subject": "s", "from_addr": "a@x", "to_addr": ["b@x"],
         "folder": f} for i, f in enumerate(folders, 1)]}))


def test_each_folder_the_file_names_and_inbox(tmp_path: Path) -> None:
    """With preserve_folders (the default) every folder named in the export, and INBOX (where
    the server puts what it cannot file), from a path relative to the server's folder."""
    export(tmp_path / "mail.json", ["Archive", "Projects.2024", "Archive"])
    assert import_folders({"import_path": "mail.json"}, str(tmp_path)) == [
        "Archive", "INBOX", "Projects.2024"]


def test_target_folder_without_preserving(tmp_path: Path) -> None:
    """preserve_folders false: everything goes to target_folder; an entry without a folder
    goes there too when folders are preserved."""
    export(tmp_path / "mail.json", ["Archive", None])
    assert import_folders({"import_path": str(tmp_path / "mail.json"), "target_folder": "Old",
                           "preserve_folders": False}, "/") == ["INBOX", "Old"]
    assert import_folders({"import_path": "mail.json", "target_folder": "Old"},
                          str(tmp_path)) == ["Archive", "INBOX", "Old"]


def test_an_unreadable_file_says_why(tmp_path: Path) -> None:
    """A missing file, or JSON that is not the server's export, is named: the caller then
    captures the whole account."""
    (tmp_path / "bad.json").write_text('{"messages": []}')
    assert "not an emails-mcp export" in str(import_folders({"import_path": "bad.json"},
                                                            str(tmp_path)))
    assert "does not exist" in str(import_folders({"import_path": "gone.eml"}, str(tmp_path)))
    assert import_folders({}, str(tmp_path)) == "import_emails names no file"
