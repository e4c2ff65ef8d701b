"""Tier 4: a language model reads a call no rule understands and names its targets.

Off unless a model is configured (``PREIMAGE_MODEL`` / ``model:``); litellm
is imported only here, only then (``pip install 'preimage[llm]'``).  The
answer must be JSON matching :class:`ModelAnswer`; every URI is parsed and
its scheme checked, and a ``file``/``git``/``pip`` path must be absolute.
A rejected answer falls back to the workspace snapshot and says why.

When the answer carries a rule, it is checked by rendering it against the
call it came from — it must reproduce the same targets — and then appended
to ``rules.d/learned.yaml`` with provenance, so the next call of that shape
is handled by tier 2 without a model.
"""

from __future__ import annotations

import datetime as _dt
import json
import os
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import yaml
from pydantic import BaseModel, ConfigDict, Field, ValidationError

from preimage.interface.errors import PreimageError
from preimage.interface.registry import known_schemes
from preimage.interface.target import Target
from preimage.layer.call import ToolCall
from preimage.layer.config import rules_dir
from preimage.layer.context import Context
from preimage.layer.decision import Finding, PlannedTarget

_SYSTEM = """You protect a user's state before an AI agent's tool call runs.
Given a tool call, answer with JSON only:
{"read_only": bool, "targets": [URI, ...], "reason": "...",
 "rule": {"command": "<program>", "subcommand": ["<word>", ...], "targets": ["<template>", ...]} | null}
Target URI schemes: file:///abs/path (file or tree), git:///abs/repo, pip:///abs/venv,
postgresql://user@host:port/db[?tables=s.t1,s.t2|?schema=s|?table=s.t&where=PRED],
sqlite:////abs/file.db, k8s://CONTEXT/NAMESPACE[/RESOURCE[/NAME]] (cluster-scoped: _;
one resource in every namespace: _all/RESOURCE),
imap://user@host:port/FOLDER, browser:///profile?origin=URL, web+ADAPTER://host:port/path.
Name exactly the state the call can change. Templates may use {cwd}, {workspace}, {home},
{arg1}.. (positionals after the subcommand). Generalise the rule to sibling subcommands with
the same effect."""


class LearnedRule(BaseModel):
    """A rule the model proposes."""

    model_config = ConfigDict(extra="ignore", defer_build=True)  # built when a model answers

    command: str
    subcommand: list[str] = Field(default_factory=list)
    targets: list[str]


class ModelAnswer(BaseModel):
    """The JSON a model must return."""

    model_config = ConfigDict(extra="ignore", defer_build=True)  # built when a model answers

    read_only: bool = False
    targets: list[str] = Field(default_factory=list)
    reason: str = ""
    rule: LearnedRule | None = None


@dataclass
class ModelResult:
    """What tier 4 decided."""

    targets: list[PlannedTarget] = field(default_factory=list)
    read_only: bool = False
    tokens: int = 0
    notes: list[str] = field(default_factory=list)


def validate_uri(uri: str) -> str | None:
    """Why ``uri`` is not an acceptable target, or ``None``."""
    try:
        t = Target.parse(uri)
    except PreimageError as exc:
        return str(exc)
    schemes = set(known_schemes())
    if t.scheme not in schemes and t.scheme.split("+", 1)[0] + "+" not in schemes:
        return f"unknown scheme {t.scheme}"
    if t.scheme in ("file", "git", "pip") and not t.path.startswith("/"):
        return f"{uri}: the path must be absolute"
    return None


class ModelTier:
    """Ask ``model`` (a litellm model name) about calls no rule understands."""

    def __init__(self, model: str, *, mock_response: str | None = None, learn: bool = True,
                 learned_file: Path | None = None,
                 completion: Callable[[list[dict[str, str]]], tuple[str, int]] | None = None,
                 ) -> None:
        """``completion`` answers ``messages`` with ``(text, tokens)`` instead of litellm
        (another client, or a test that exercises the tier without importing litellm)."""
        self.model = model
        self.mock_response = mock_response
        self.learn = learn
        self.learned_file = learned_file
        self.completion = completion

    def _complete(self, messages: list[dict[str, str]]) -> tuple[str, int]:
        if self.completion is not None:
            return self.completion(messages)
        # litellm's bundled cost map: its import would otherwise fetch one over the network
        os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")
        import litellm

        kwargs: dict[str, Any] = {"model": self.model, "messages": messages,
                                  "response_format": {"type": "json_object"}, "timeout": 30}
        if self.mock_response is not None:
            kwargs["mock_response"] = self.mock_response
        resp = litellm.completion(**kwargs)
        text = resp.choices[0].message.content or ""
        usage = getattr(resp, "usage", None)
        tokens = int(getattr(usage, "total_tokens", 0) or 0)
        return text, tokens

    def decide(self, call: ToolCall, unknowns: list[Finding], ctx: Context, rules: Any) -> ModelResult:
        """Targets for the unknown parts of ``call``; never raises."""
        prompt = json.dumps({
            "tool": call.tool, "input": call.to_record()["input"], "cwd": call.cwd,
            "workspace": ctx.workspace, "home": ctx.home, "policy": ctx.config.policy,
            "unclear_parts": [f.source for f in unknowns],
        })
        try:
            text, tokens = self._complete([{"role": "system", "content": _SYSTEM},
                                           {"role": "user", "content": prompt}])
        except Exception as exc:  # any provider failure: fall back, never block
            return ModelResult(notes=[f"model {self.model} unavailable ({type(exc).__name__}); "
                                      "falling back to the workspace snapshot"])
        result = ModelResult(tokens=tokens)
        try:
            answer = ModelAnswer.model_validate_json(text)
        except ValidationError as exc:
            result.notes.append(f"model answer rejected (not the expected JSON: "
                                f"{exc.errors()[0]['msg']}); falling back to the workspace snapshot")
            return result
        bad = [(u, why) for u in answer.targets if (why := validate_uri(u))]
        if bad:
            result.notes.append("model answer rejected: " + "; ".join(w for _, w in bad)
                                + " — falling back to the workspace snapshot")
            return result
        result.read_only = answer.read_only and not answer.targets
        result.targets = [PlannedTarget(u, f"model: {answer.reason}"[:200],
                                        external=not u.startswith(("file:", "git:", "pip:")))
                          for u in answer.targets]
        result.notes.append(f"model {self.model}: {answer.reason}".strip())
        if answer.rule and self.learn and result.targets and call.is_shell:
            note = self._save_rule(answer, call, ctx, rules)
            if note:
                result.notes.append(note)
        return result

    def _save_rule(self, answer: ModelAnswer, call: ToolCall, ctx: Context, rules: Any) -> str | None:
        from preimage.layer.deciding.rules import Rule, RuleMatch, render, template_fields
        from preimage.layer.reading.shell import parse

        assert answer.rule is not None
        cmds = [c for c in parse(call.command or "", cwd=call.workdir, env=ctx.env).commands
                if c.name == answer.rule.command]
        if not cmds:
            return "model rule not saved: its command is not in the call"
        first = answer.rule.subcommand[0] if answer.rule.subcommand else "any"
        rule = Rule(name=f"learned-{answer.rule.command}-{first}",
                    tier="pair", match=RuleMatch(command=[answer.rule.command],
                                                 subcommand=answer.rule.subcommand),
                    targets=answer.rule.targets, impact="normal",
                    description=answer.reason[:200],
                    provenance={"source": "model", "model": self.model,
                                "created": _dt.datetime.now(_dt.UTC).isoformat(timespec="seconds"),
                                "call": (call.command or "")[:500], "reason": answer.reason[:500]})
        cmd = cmds[0]
        if rule.match.subcommand and rules is not None:
            from preimage.layer.deciding.rules import RuleSet

            if RuleSet([rule]).match_command(cmd) is None:
                return "model rule not saved: it does not match the call it came from"
        fields = template_fields(cwd=cmd.cwd, workspace=ctx.workspace, home=ctx.home,
                                 env=cmd.env, cmd=cmd, rule=rule)
        rendered = [render(t, fields) for t in rule.targets]
        if sorted(r or "" for r in rendered) != sorted(answer.targets):
            return "model rule not saved: its templates do not reproduce its own targets"
        path = self.learned_file or rules_dir() / "learned.yaml"
        try:
            path.parent.mkdir(parents=True, exist_ok=True)
            doc = (yaml.safe_load(path.read_text()) if path.exists() else None) or {}
            doc.setdefault("rules", []).append(
                rule.model_dump(exclude={"source", "origin", "extract", "params"}, mode="json"))
            tmp = path.with_suffix(".tmp")
            tmp.write_text(yaml.safe_dump(doc, sort_keys=False))
            tmp.replace(path)
        except (OSError, yaml.YAMLError) as exc:
            return f"model rule not saved: {exc}"
        return f"saved learned rule {rule.name} to {path}"
