"""Tier 4: a model names targets for calls no rule knows; its decision becomes a rule."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from layer_world import World, named

from preimage import Store
from preimage.layer import BackupLayer, LayerConfig, ModelTier, Tier, ToolCall


@pytest.fixture(autouse=True)
def _offline_litellm(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("LITELLM_LOCAL_MODEL_COST_MAP", "True")


def answer(world: World) -> str:
    """What the (mocked) model says about `mytool purge --all`."""
    return json.dumps({
        "read_only": False,
        "targets": [f"file://{world.proj}/logs"],
        "reason": "mytool purge deletes the project's logs directory",
        "rule": {"command": "mytool", "subcommand": ["purge", "prune"],
                 "targets": ["file://{cwd}/logs"]},
    })


def replying(text: str) -> ModelTier:
    """A model tier whose model answers ``text``: the tier's own handling of an answer, without
    litellm (one test below goes through litellm itself)."""
    return ModelTier("gpt-4o-mini", completion=lambda _messages: (text, 42))


def make_layer(world: World, store: Store, model: ModelTier | None) -> BackupLayer:
    return BackupLayer(store=store, config=LayerConfig(workspace=str(world.proj)),
                       env=world.env, model=model)


def test_model_names_targets_and_the_rule_is_learned(world: World, store: Store,
                                                     home: Path) -> None:
    """The model's targets are captured; the saved rule handles a sibling call with 0 tokens
    (through litellm itself, with its mock_response)."""
    model = ModelTier("gpt-4o-mini", mock_response=answer(world))
    call = ToolCall.shell("mytool purge --all", cwd=str(world.proj), env=world.env)
    first = make_layer(world, store, model).before(call)
    assert first.tier is Tier.MODEL and first.model_tokens > 0
    assert named(first.targets) == [f"file://{world.proj}/logs"] and first.backup_id
    learned = home.parent / "config" / "rules.d" / "learned.yaml"
    assert "provenance" in learned.read_text() and "mytool purge --all" in learned.read_text()
    never = replying("this must not be asked")
    second = make_layer(world, store, never).before(
        ToolCall.shell("mytool prune", cwd=str(world.proj), env=world.env))
    assert second.tier is Tier.PAIR and second.model_tokens == 0
    assert second.rules == ["learned-mytool-purge"]
    assert named(second.targets) == [f"file://{world.proj}/logs"]


@pytest.mark.parametrize("reply", ["not json at all", json.dumps({"targets": ["logs/relative"]}),
                                   json.dumps({"targets": ["nosuchscheme://x"]})])
def test_invalid_model_answer_falls_back_to_the_workspace(reply: str, world: World,
                                                          store: Store) -> None:
    """A reply that is not valid JSON or names bad URIs is rejected; the workspace is captured."""
    decision = make_layer(world, store, replying(reply)).before(
        ToolCall.shell("mytool purge", cwd=str(world.proj), env=world.env))
    assert decision.tier is Tier.WORKSPACE
    assert decision.targets[0] == f"file://{world.proj}"
    assert f"file://{world.home}?depth=1" in decision.targets  # where tools keep their state
    assert "rejected" in decision.additional_context


def test_without_a_model_unknown_calls_snapshot_the_workspace_and_say_so(
        world: World, store: Store) -> None:
    """No model configured: an unknown call gets the workspace snapshot and an explanation."""
    decision = make_layer(world, store, None).before(
        ToolCall.shell("mytool purge", cwd=str(world.proj), env=world.env))
    assert decision.tier is Tier.WORKSPACE and decision.backup_id
    assert decision.model_tokens == 0
    assert "no model is configured" in decision.additional_context


def test_model_can_declare_a_call_read_only(world: World, store: Store) -> None:
    """A read-only verdict lets the call pass without any capture."""
    reply = json.dumps({"read_only": True, "targets": [], "reason": "prints a report"})
    decision = make_layer(world, store, replying(reply)).before(
        ToolCall.shell("mytool report", cwd=str(world.proj), env=world.env))
    assert decision.backup_id is None and decision.targets == []
