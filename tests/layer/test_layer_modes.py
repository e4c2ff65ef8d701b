"""Modes and the plain-words policy narrow what is captured, and say what they skipped."""

from __future__ import annotations

import pytest
from layer_world import World, named

from preimage import Store
from preimage.layer import BackupLayer, LayerConfig, Mode, ToolCall


def plan_uris(world: World, store: Store, command: str, **cfg: object) -> tuple[set[str], list[str]]:
    layer = BackupLayer(store=store, config=LayerConfig(workspace=str(world.proj), **cfg),
                        env=world.env)
    plan = layer.plan(ToolCall.shell(command, cwd=str(world.proj), env=world.env))
    return set(named(t.uri for t in plan.wanted)), plan.notes


@pytest.mark.parametrize(("mode", "command", "captured"), [
    (Mode.HIGH_IMPACT, "rm notes.txt", True),
    (Mode.HIGH_IMPACT, "touch new-file.txt", False),
    (Mode.HIGH_IMPACT, "git commit -am wip", False),
    (Mode.HIGH_IMPACT, "make build", False),
    (Mode.BEYOND_REQUEST, "sed -i s/a/b/ notes.txt", False),
    (Mode.BEYOND_REQUEST, "rm -f logs/*.log", True),
    (Mode.BEYOND_REQUEST, "rm ~/Documents/notes.md", True),
    (Mode.BEYOND_REQUEST, "kubectl delete pod web-1 -n shop", True),
    (Mode.HUMAN_WORK, "rm -rf build", False),
    (Mode.HUMAN_WORK, "pip install -U requests", False),
    (Mode.HUMAN_WORK, "rm -rf src", True),
    (Mode.FULL, "touch new-file.txt", True),
])
def test_mode_selects_calls(mode: Mode, command: str, captured: bool, world: World,
                            store: Store) -> None:
    """Each mode captures what it promises and nothing else."""
    uris, notes = plan_uris(world, store, command, mode=mode)
    assert bool(uris) is captured, (uris, notes)
    if not captured:
        assert any(mode.value in n for n in notes)


def test_policy_excludes_and_includes(world: World, store: Store) -> None:
    """`never back up logs` drops log targets; `always back up databases` beats high-impact mode."""
    uris, notes = plan_uris(world, store, "rm -rf logs src", policy="never back up logs")
    assert uris == {f"file://{world.proj}/src"}
    assert any("policy" in n for n in notes)
    uris, _ = plan_uris(world, store, 'psql shop -c "INSERT INTO t VALUES (1)"',
                        mode=Mode.HIGH_IMPACT, policy="always back up databases")
    assert uris == set()  # high-impact drops the INSERT before the policy sees targets
    uris, notes = plan_uris(world, store, "rm notes.txt", policy="be careful with my thesis")
    assert uris and any("not understood" in n for n in notes)


def test_store_inside_a_deleted_tree_is_kept_out(world: World, tmp_path, monkeypatch) -> None:  # type: ignore[no-untyped-def]
    """`rm -rf ~` with the store under ~ captures everything beside the store (new entries
    beside it included, so a restore removes them), not the store."""
    store = Store(world.home / ".local" / "share" / "preimage")
    layer = BackupLayer(store=store, config=LayerConfig(workspace=str(world.proj)), env=world.env)
    plan = layer.plan(ToolCall.shell("rm -rf ~", cwd=str(world.home), env=world.env))
    uris = {t.uri for t in plan.wanted}
    assert f"file://{world.home}?exclude=.local/share/preimage" in uris, uris
    assert not any(u.startswith(f"file://{world.home}/.local/share/preimage") for u in uris)
    assert f"file://{world.home}" not in uris
    store.close()
