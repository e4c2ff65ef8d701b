"""Bad input and hostile conditions: wrong passwords, poor servers, odd names, huge mail, cut connections."""

from __future__ import annotations

import socket
from typing import Any

import pytest

import preimage
from preimage import Store, TerminalConnectorError, TransientConnectorError
from preimage.snapshot_schemas.imap import ImapSnapshot

from .conftest import Account, CliResult, date_of, load_fixture, make_message

pytestmark = pytest.mark.imap


def test_wrong_password_is_a_clear_terminal_error(
    account: Account, store: Store, monkeypatch: pytest.MonkeyPatch, cli: Any
) -> None:
    """A refused login says who failed where and where the password comes from; nothing is stored."""
    monkeypatch.setenv("PREIMAGE_IMAP_PASSWORD", "not-the-password")
    with pytest.raises(TerminalConnectorError, match=r"login as .* failed.*PREIMAGE_IMAP_PASSWORD"):
        preimage.capture([account.uri("INBOX")], store=store)
    proc: CliResult = cli("capture", account.uri("INBOX"), check=False,
                          env={"PREIMAGE_IMAP_PASSWORD": "not-the-password"})
    assert proc.returncode != 0
    assert "AUTHENTICATIONFAILED" in proc.stderr and "Traceback" not in proc.stderr


def test_missing_password_says_where_to_put_it(
    account: Account, store: Store, monkeypatch: pytest.MonkeyPatch, tmp_path: Any
) -> None:
    """Without a password anywhere the error names the variables and ~/.netrc."""
    monkeypatch.delenv("PREIMAGE_IMAP_PASSWORD")
    monkeypatch.delenv("IMAP_PASSWORD", raising=False)
    monkeypatch.setenv("HOME", str(tmp_path))
    with pytest.raises(TerminalConnectorError, match=r"no password .*PREIMAGE_IMAP_PASSWORD.*netrc"):
        preimage.capture([account.uri("INBOX")], store=store)


def test_password_from_netrc(
    account: Account, store: Store, monkeypatch: pytest.MonkeyPatch, tmp_path: Any
) -> None:
    """A ~/.netrc entry for the host and user is enough to log in."""
    monkeypatch.delenv("PREIMAGE_IMAP_PASSWORD")
    monkeypatch.setenv("HOME", str(tmp_path))
    netrc = tmp_path / ".netrc"
    netrc.write_text(f"machine 127.0.0.1 login {account.user} password preimage-test-pw\n")
    netrc.chmod(0o600)
    account.seed({"INBOX": [(make_message(1), [], date_of(1))]})
    snap = preimage.capture([account.uri("INBOX")], store=store).snapshots[0]
    assert len(snap.items) == 2


def test_unreachable_server_is_transient(store: Store) -> None:
    """A closed port is a transient error that asks whether the server runs."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    with pytest.raises(TransientConnectorError, match="cannot reach IMAP server"):
        preimage.capture([f"imap://alice@127.0.0.1:{port}/INBOX"], store=store)


def test_imaps_with_a_self_signed_certificate(account: Account, store: Store, dovecot: Any) -> None:
    """imaps:// refuses an untrusted certificate with advice, and works with ?cafile=."""
    account.seed({"INBOX": [(make_message(1), ["\\Seen"], date_of(1))]})
    with pytest.raises(TerminalConnectorError, match=r"not trusted.*cafile"):
        preimage.capture([account.uri("INBOX", scheme="imaps")], store=store)
    uri = dovecot.uri(account.user, "INBOX", scheme="imaps", cafile=str(dovecot.cert))
    snap = preimage.capture([uri], store=store).snapshots[0]
    assert isinstance(snap, ImapSnapshot)
    assert [m.flags for m in snap.messages] == [["\\Seen"]]


def test_server_without_uidplus_multiappend_move_degrades_and_says_so(
    minimal_account: Account, store: Store
) -> None:
    """Without UIDPLUS, MULTIAPPEND, MOVE and CONDSTORE the restore still comes back exactly, noting how."""
    account = minimal_account
    account.seed({
        "INBOX": [(make_message(i), ["\\Seen"] if i % 2 else [], date_of(i)) for i in range(1, 9)],
        # A message the user marked \Deleted but never expunged: it must survive the restore.
        "Trash": [(make_message(90), ["\\Deleted"], date_of(90))],
    })
    before = account.state()
    backup = preimage.capture([account.uri("INBOX")], store=store)
    c = account.client()
    c.select_folder("INBOX")
    c.copy([1, 2, 3], "Trash")
    c.delete_messages([1, 2, 3, 4, 5], silent=True)
    c.expunge()
    c.add_flags([6, 7, 8], ["\\Seen"], silent=True)
    c.logout()
    result = preimage.restore(backup.id, store=store)
    (report,) = result.reports
    notes = " ".join(report.notes)
    assert "MULTIAPPEND" in notes and "UIDPLUS" in notes and "MOVE" in notes
    assert account.state() == before
    assert {r.old for r in report.remaps if r.field == "uid"} == {1, 2, 3, 4, 5}
    total, _ = preimage.score(backup.id, store=store)
    assert (total.classes["content"].score, total.classes["metadata"].score) == (1.0, 1.0)


def test_non_ascii_folder_names_round_trip(account: Account, store: Store) -> None:
    """Folders named in any script (modified UTF-7 on the wire) are captured, re-created and addressed by URI."""
    names = ["Réunions/日本", "Entwürfe & Pläne", "Входящие"]
    account.seed({n: [(make_message(i), ["\\Seen"], date_of(i))]
                  for i, n in enumerate(names)})
    before = account.state()
    backup = preimage.capture([account.uri()], store=store)
    c = account.client()
    for n in names:
        c.delete_folder(n)
    c.logout()
    preimage.restore(backup.id, store=store)
    assert account.state() == before
    one = preimage.capture([account.uri("Réunions/日本")], store=store).snapshots[0]
    assert isinstance(one, ImapSnapshot)
    assert [f.folder for f in one.folders] == ["Réunions/日本"] and len(one.messages) == 1


@pytest.mark.slow
def test_message_over_20_mb_comes_back_byte_for_byte(account: Account, store: Store) -> None:
    """A 21 MB message is captured and appended back unchanged."""
    big = make_message(1, extra_bytes=21 * 1024 * 1024)
    account.seed({"INBOX": [(big, ["\\Flagged"], date_of(1)), (make_message(2), [], date_of(2))]})
    before = account.state()
    backup = preimage.capture([account.uri("INBOX")], store=store)
    c = account.client()
    c.select_folder("INBOX")
    c.delete_messages([1], silent=True)
    c.expunge()
    c.logout()
    preimage.restore(backup.id, store=store)
    assert account.state() == before
    snap = backup.snapshots[0]
    assert isinstance(snap, ImapSnapshot)
    (m,) = [m for m in snap.messages if m.size > 20 * 1024 * 1024]
    assert store.blobs.get_bytes(m.digest) == big


def _cut_restore(account: Account, store: Store, cut_at: int, n: int) -> None:
    """Capture n messages through a proxy, expunge them, cut the restore's connection at the
    cut_at-th APPEND (after the server did it), then run the restore again."""
    proxy = load_fixture("dropping_proxy").DroppingProxy(account.server.host, account.server.port)
    try:
        account.seed({"INBOX": [(make_message(i), ["\\Seen"] if i % 2 else ["$x"], date_of(i))
                                for i in range(1, n + 1)]})
        before = account.state()
        uri = f"imap://{account.user}@127.0.0.1:{proxy.port}/INBOX"
        backup = preimage.capture([uri], store=store)
        c = account.client()
        c.select_folder("INBOX")
        c.delete_messages(c.search("ALL"), silent=True)
        c.expunge()
        c.logout()
        proxy.cut_after(b" APPEND ", count=cut_at)
        with pytest.raises(TransientConnectorError, match="Run the same command again"):
            preimage.restore(backup.id, store=store)
        assert proxy.cuts == 1
        assert 0 < account.counts()["INBOX"] < n
        proxy.disarm()
        preimage.restore(backup.id, store=store)
        assert account.state() == before
        assert account.counts()["INBOX"] == n
    finally:
        proxy.stop()


def test_connection_dropped_mid_restore_finishes_without_duplicates(account: Account, store: Store) -> None:
    """A restore cut off after a MULTIAPPEND batch the server took, run again, ends with each message once."""
    _cut_restore(account, store, cut_at=2, n=250)


def test_connection_dropped_between_single_appends_finishes_without_duplicates(
    minimal_account: Account, store: Store
) -> None:
    """On a server without MULTIAPPEND, a restore cut off after the 5th APPEND finishes without duplicates."""
    _cut_restore(minimal_account, store, cut_at=5, n=12)
