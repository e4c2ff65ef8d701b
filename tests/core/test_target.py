"""Target URIs: parsing, redaction and password resolution."""

from __future__ import annotations

import pytest

from preimage import InvalidTargetError, Target
from preimage.interface.target import redact


def test_password_is_never_in_the_stored_uri() -> None:
    """A password in a URI is kept in memory but not in the redacted form."""
    t = Target.parse("postgresql://app:s3cret@127.0.0.1:5432/shop?tables=public.orders")
    assert "s3cret" not in t.redacted
    assert "s3cret" not in repr(t)
    assert t.password == "s3cret"
    assert t.redacted == "postgresql://app@127.0.0.1:5432/shop?tables=public.orders"
    assert t.param("tables") == "public.orders"


def test_password_resolves_from_environment(monkeypatch: pytest.MonkeyPatch) -> None:
    """A stored (redacted) URI finds its password in PREIMAGE_<SCHEME>_PASSWORD."""
    monkeypatch.setenv("PREIMAGE_IMAP_PASSWORD", "pw")
    assert Target.parse("imap://bob@127.0.0.1:1143/INBOX").resolve_password() == "pw"


@pytest.mark.parametrize("bad", ["", "   ", "no-scheme/path", "1http://x", "postgresql://h:notaport/db"])
def test_malformed_uris_are_rejected_with_a_reason(bad: str) -> None:
    """Malformed URIs raise InvalidTargetError that names the URI."""
    with pytest.raises(InvalidTargetError) as info:
        Target.parse(bad)
    assert "invalid target" in str(info.value)


def test_redact_scrubs_passwords_in_free_text() -> None:
    """Error messages are scrubbed of user:password@ before printing."""
    assert redact("cannot reach postgresql://u:pw@h/db") == "cannot reach postgresql://u:***@h/db"
