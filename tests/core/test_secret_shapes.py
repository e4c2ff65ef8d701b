"""Secrets are recognised by their shape as well as by the flag or name that carries them:
a corpus of real credential formats, each made fresh here (random, in the issuer's
documented format), is masked wherever it appears — and detect-secrets, a scanner
nobody here wrote, finds nothing of it in what is kept or printed."""

from __future__ import annotations

import base64
import json
import secrets
import string
import subprocess
from collections.abc import Callable
from pathlib import Path

import pytest
from detect_secrets.core.scan import scan_line
from detect_secrets.settings import transient_settings

import preimage
from preimage import Store
from preimage.interface.redact import redact, redact_value
from preimage.layer.call import ToolCall

CliResult = subprocess.CompletedProcess[str]
ALNUM = string.ascii_letters + string.digits
UPPER = string.ascii_uppercase + string.digits


def _r(n: int, alphabet: str = ALNUM) -> str:
    return "".join(secrets.choice(alphabet) for _ in range(n))


def _b64url(n: int) -> str:
    return _r(n, ALNUM + "-_")


def _corpus() -> list[tuple[str, str, str]]:
    """(name, command, the secret in it): each format as its issuer documents it."""
    aws_id = "AKIA" + _r(16, UPPER)
    aws_secret = _r(40, ALNUM + "/+")
    claims = json.dumps({"sub": _r(12), "iat": secrets.randbelow(1 << 31)}).encode()
    jwt = ("eyJhbGciOiJIUzI1NiIsInR5cCI6IkpXVCJ9."
           + base64.urlsafe_b64encode(claims).decode().rstrip("=") + "." + _b64url(43))
    pem_body = _r(64, ALNUM + "+/")
    return [
        ("mariadb -p", f"mariadb -uroot -p{(p := _r(14))} shop -e 'DROP TABLE t'", p),
        ("mariadb-dump -p", f"mariadb-dump -p{(p := _r(12))} shop > dump.sql", p),
        ("aws key id", f"aws configure set aws_access_key_id {aws_id}", aws_id),
        ("aws secret", f"aws configure set aws_secret_access_key {aws_secret}", aws_secret),
        ("aws key in text", f"echo {aws_id} >> notes", aws_id),
        ("anthropic", f"echo sk-ant-api03-{(k := _b64url(93))}AA",
         f"sk-ant-api03-{k}AA"),
        ("openai", f"OPENAI={(k := 'sk-proj-' + _b64url(48))} python run.py", k),
        ("github classic", f"git push https://{(k := 'ghp_' + _r(36))}@github.invalid/o/r", k),
        ("github fine-grained", f"gh auth login --with-token <<< {(k := 'github_pat_' + _r(22) + '_' + _r(59))}", k),
        ("gitlab header", f"curl -H 'Private-Token: {(k := 'glpat-' + _b64url(20))}' https://gl.invalid/api/v4/projects", k),
        ("gitlab bare", f"echo {(k := 'glpat-' + _b64url(20))}", k),
        ("slack bot", f"curl -d token={(k := 'xoxb-' + _r(12, string.digits) + '-' + _r(13, string.digits) + '-' + _r(24))} https://slack.invalid/api", k),
        ("slack in text", f"notify {(k := 'xoxp-' + _r(12, string.digits) + '-' + _r(12, string.digits) + '-' + _r(13, string.digits) + '-' + _r(32, '0123456789abcdef'))}", k),
        ("jwt", f"curl https://api.invalid/x -b session={jwt}", jwt),
        ("jwt bare", f"echo {jwt}", jwt),
        ("private key", "printf '-----BEGIN RSA PRIVATE KEY-----\\n" + pem_body
         + "\\n-----END RSA PRIVATE KEY-----\\n' > id_rsa", pem_body),
        ("openssh key", "cat > k <<EOF\n-----BEGIN OPENSSH PRIVATE KEY-----\n" + pem_body
         + "\n-----END OPENSSH PRIVATE KEY-----\nEOF", pem_body),
        ("redis-cli -a", f"redis-cli -h 127.0.0.1 -a {(p := _r(16))} FLUSHALL", p),
        ("docker login -p", f"docker login -u me -p {(p := _r(16))} registry.invalid", p),
        ("api-key header", f"curl -H 'api-key: {(p := _r(32))}' -X DELETE https://x.invalid/i", p),
        ("kubectl from-literal", "kubectl create secret generic db "
         f"--from-literal=password={(p := _r(16))} --from-literal=user=app", p),
        ("sqlcmd -P", f"sqlcmd -S tcp:db,1433 -U sa -P {(p := _r(16))} -Q 'DROP DATABASE x'", p),
        ("stripe", f"curl https://api.stripe.invalid/v1/charges -u {(k := 'sk_live_' + _r(24))}:", k),
        ("google api key", f"curl 'https://maps.invalid/api?key={(k := 'AIza' + _b64url(35))}'", k),
        ("npm token", f"npm config set //registry.invalid/:_authToken={(k := 'npm_' + _r(36))}", k),
        ("huggingface", f"huggingface-cli login --token {(k := 'hf_' + _r(34))}", k),
        ("sendgrid", f"echo {(k := 'SG.' + _b64url(22) + '.' + _b64url(43))}", k),
    ]


CORPUS = _corpus()

#: detect-secrets plugins that know a format (not the entropy or keyword guessers)
_FORMATS = ["AWSKeyDetector", "GitHubTokenDetector", "GitLabTokenDetector", "SlackDetector",
            "JwtTokenDetector", "PrivateKeyDetector", "StripeDetector", "SendGridDetector",
            "NpmDetector", "OpenAIDetector", "BasicAuthDetector"]


def _found(text: str) -> set[str]:
    """What detect-secrets' format plugins find in ``text``, line by line."""
    with transient_settings({"plugins_used": [{"name": n} for n in _FORMATS]}):
        return {f"{s.type}: {s.secret_value}" for line in text.splitlines()
                for s in scan_line(line)}


@pytest.mark.parametrize(("name", "command", "secret"), CORPUS, ids=[c[0] for c in CORPUS])
def test_every_secret_format_is_masked(name: str, command: str, secret: str) -> None:
    """The secret is gone from the redacted command; detect-secrets finds nothing left."""
    clean = redact(command)
    assert secret not in clean, clean
    assert "***" in clean
    assert not _found(clean), _found(clean)


def test_detect_secrets_knows_the_formats_it_is_asked_about() -> None:
    """The oracle is awake: on the raw corpus it finds what it knows (else its silence above means nothing)."""
    known = [c for c in CORPUS if c[0] in ("aws key id", "github classic", "gitlab bare",
                                           "slack in text", "jwt bare", "private key",
                                           "stripe", "npm token")]
    for _name, command, _secret in known:
        assert _found(command), command


def test_a_call_full_of_secrets_leaves_none_in_the_catalog_or_the_output(
    tmp_path: Path, store: Store, home: Path, cli: Callable[..., CliResult]
) -> None:
    """Every corpus command as an agent's call: not one secret in the catalog bytes, `list`, `show` or `log`."""
    root = tmp_path / "t"
    root.mkdir()
    (root / "f").write_text("x")
    for command in [c[1] for c in CORPUS]:
        record = ToolCall.shell(command, cwd=str(tmp_path), session_id="s").to_record()
        preimage.capture([f"file://{root}"], store=store, tool_call=record, label=command)
    catalog = b"".join(p.read_bytes() for p in home.iterdir()
                       if p.name.startswith("catalog.sqlite"))
    shown = cli("list").stdout + "".join(
        cli("show", r.id).stdout for r in store.catalog.list_backups(None))
    for _name, _command, secret in CORPUS:
        assert secret.encode() not in catalog
        assert secret not in shown
    assert redact_value({"note": CORPUS[0][1]})["note"] == redact(CORPUS[0][1])
