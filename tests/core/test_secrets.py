"""Secrets in an agent's tool call never reach the catalog, a log or the output."""

from __future__ import annotations

import json
import stat
import subprocess
from collections.abc import Callable
from pathlib import Path

import pytest
from click.testing import CliRunner

import preimage
from preimage import Store
from preimage.cli.main import main
from preimage.interface.redact import redact, redact_value
from preimage.layer.call import ToolCall

CliResult = subprocess.CompletedProcess[str]

SECRET_CALLS = [
    "psql postgresql://app:PW-in-uri@127.0.0.1/shop -c 'DROP TABLE orders'",
    "PGPASSWORD=PW-in-env psql -h 127.0.0.1 shop -c 'TRUNCATE t'",
    "curl -u admin:PW-in-user -X DELETE https://api.example/items/1",
    "curl -H 'Authorization: Bearer PW-in-header' -X DELETE https://api.example/x",
    "curl -X DELETE 'https://api.example/x?password=PW-in-query&id=3'",
    "mysql -uroot -pPW-in-mysql shop -e 'DROP TABLE t'",
    "deploy --password PW-in-flag --api-key=PW-in-option",
]


def _catalog_bytes(home: Path) -> bytes:
    return b"".join(p.read_bytes() for p in home.iterdir() if p.name.startswith("catalog.sqlite"))


@pytest.mark.parametrize("command", SECRET_CALLS)
def test_redact_scrubs_each_form(command: str) -> None:
    """Every credential form of the list is masked; the rest of the command stays."""
    clean = redact(command)
    assert "PW-in-" not in clean
    assert "***" in clean


def test_secrets_in_tool_calls_never_reach_the_catalog_or_output(
    tmp_path: Path, store: Store, home: Path
) -> None:
    """Tool calls, labels and targets with passwords are stored and printed redacted."""
    root = tmp_path / "t"
    root.mkdir()
    (root / "f").write_text("x")
    for i, command in enumerate(SECRET_CALLS):
        call = ToolCall.shell(command, cwd=str(tmp_path), session_id="s")
        record = call.to_record()
        record["input"]["env"] = {"AWS_SECRET_ACCESS_KEY": "PW-in-json", "HOME": "/root"}
        preimage.capture([f"file://{root}?token=PW-in-target"], store=store,
                         tool_call=record, label=f"{i} {command}")
    assert b"PW-in-" not in _catalog_bytes(store.home)
    runner = CliRunner(env={"PREIMAGE_HOME": str(home)})

    def run(*args: str) -> str:
        result = runner.invoke(main, list(args), catch_exceptions=False)
        return result.stdout + result.stderr

    listed = run("list", "--json")
    assert "PW-in-" not in listed
    for doc in json.loads(listed):
        shown = run("show", doc["id"])
        assert "PW-in-" not in shown and "***" in shown
    backup = json.loads(listed)[0]["id"]
    for args in (("diff", backup), ("score", backup), ("restore", backup, "--dry-run")):
        assert "PW-in-" not in run(*args)


def test_the_hook_log_is_private_and_redacted(tmp_path: Path, cli: Callable[..., CliResult]) -> None:
    """hook.log is created 0600 and holds no raw secret, even for a malformed payload."""
    log = tmp_path / "logs" / "hook.log"
    env = {"PREIMAGE_LOG": str(log)}
    payload = {"hook_event_name": "PreToolUse", "tool_name": "Bash", "cwd": str(tmp_path),
               "tool_input": {"command": "PGPASSWORD=PW-in-env echo hi"}}
    cli("hook", "claude-code", input=json.dumps(payload), env=env, check=True)
    cli("hook", "claude-code", input='{"broken": "PGPASSWORD=PW-raw', env=env, check=True)
    assert stat.S_IMODE(log.stat().st_mode) == 0o600
    assert "PW-" not in log.read_text()


def test_an_existing_shared_home_keeps_its_mode(tmp_path: Path) -> None:
    """A PREIMAGE_HOME that already exists (shared by a group) is not chmod'ed."""
    home = tmp_path / "shared"
    home.mkdir()
    home.chmod(0o2770)
    with Store(home):
        pass
    assert stat.S_IMODE(home.stat().st_mode) == 0o2770
    fresh = tmp_path / "fresh"
    with Store(fresh):
        pass
    assert stat.S_IMODE(fresh.stat().st_mode) == 0o700


def test_redact_value_masks_secret_fields_and_cuts_deep_nesting() -> None:
    """Secret-named keys are masked at any depth; a pathological nesting is cut, not recursed."""
    doc = {"user": "u", "db": {"password": "x", "opts": [{"api_key": "y"}]}}
    assert redact_value(doc) == {"user": "u", "db": {"password": "***", "opts": [{"api_key": "***"}]}}
    deep: object = "leaf"
    for _ in range(5000):
        deep = [deep]
    assert json.dumps(redact_value(deep)).count("[") <= 70


def test_redact_value_keeps_token_counts_and_masks_token_values() -> None:
    """A number under a plural such as `model_tokens` is a count and stays; a token stays masked."""
    doc = {"model_tokens": 812, "max_tokens": 0, "token": "abc", "tokens": ["abc"],
           "password": 1234}
    assert redact_value(doc) == {"model_tokens": 812, "max_tokens": 0, "token": "***",
                                 "tokens": "***", "password": "***"}


# One text per substitution rule of ``redact``, in the rules' order; the quick check that
# lets a text skip the rules must let each through.
ONE_PER_RULE = [
    "git clone https://user:S3CRET@host/repo",
    "curl -H 'authorization: Basic S3CRET'",
    "curl -H 'X-Api-Key: S3CRET'",
    "PGPASSWORD=S3CRET psql",
    "deploy --token S3CRET",
    "curl --user admin:S3CRET https://x",
    "mariadb-dump -h db -pS3CRET shop",
    "sshpass -p S3CRET ssh host",
    "redis-cli -h cache -a S3CRET FLUSHALL",
    "docker login -u me -p S3CRET registry",
    "sqlcmd -S db -P S3CRET -Q 'DROP TABLE t'",
    "kubectl create secret generic s --from-literal=key=S3CRET",
    "AWS CONFIGURE SET aws_secret_access_key S3CRET",
    "curl -H 'Private-Token:  S3CRET'",
    '{"client_secret" : S3CRET}',
]


@pytest.mark.parametrize("text", ONE_PER_RULE)
def test_each_rule_still_applies_past_the_quick_check(text: str) -> None:
    from preimage.interface.redact import _rules

    assert len(ONE_PER_RULE) == len(_rules())
    rule = _rules()[ONE_PER_RULE.index(text)][0]
    assert rule.search(text), "the example exercises its rule"
    assert "S3CRET" not in redact(text)
