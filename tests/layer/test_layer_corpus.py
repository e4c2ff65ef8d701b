"""Read-only commands cause no capture; state-changing ones reach the right connector."""

from __future__ import annotations

from pathlib import Path

from layer_world import World

from preimage.layer import BackupLayer, ToolCall

CORPUS = Path(__file__).parent / "corpus"


def read_only_corpus() -> list[str]:
    """The read-only commands (one per line)."""
    return [ln for ln in (CORPUS / "read_only.txt").read_text().splitlines()
            if ln.strip() and not ln.startswith("#")]


def state_changing_corpus() -> list[tuple[str, set[str]]]:
    """``(command, schemes it must be captured with)`` rows."""
    rows = []
    for ln in (CORPUS / "state_changing.tsv").read_text().splitlines():
        if ln.strip() and not ln.startswith("#"):
            cmd, schemes = ln.split("\t")
            rows.append((cmd, set(schemes.split(","))))
    return rows


def routed(layer: BackupLayer, world: World, command: str) -> set[str]:
    """The schemes the layer would capture for ``command`` run in the world's project."""
    plan = layer.plan(ToolCall.shell(command, cwd=str(world.proj), env=world.env))
    return {t.scheme for t in plan.wanted}


def test_read_only_corpus_causes_zero_captures(layer: BackupLayer, world: World) -> None:
    """None of the >=200 read-only commands would capture anything."""
    commands = read_only_corpus()
    assert len(commands) >= 200
    captured = {c: routed(layer, world, c) for c in commands}
    assert {c: s for c, s in captured.items() if s} == {}


def test_state_changing_corpus_precision_and_recall(layer: BackupLayer, world: World) -> None:
    """Each state-changing command is captured by the connector that holds its state."""
    rows = state_changing_corpus()
    hits, wrong, missed = 0, [], []
    for command, expected in rows:
        got = routed(layer, world, command)
        if got == expected:
            hits += 1
        elif got:
            wrong.append((command, expected, got))
        else:
            missed.append(command)
    false_alarms = sum(1 for c in read_only_corpus() if routed(layer, world, c))
    captures = hits + len(wrong) + false_alarms
    precision = hits / captures
    recall = hits / len(rows)
    print(f"\nlayer routing: {len(rows)} state-changing, precision {precision:.3f}, "
          f"recall {recall:.3f}; wrong {wrong}; missed {missed}")
    assert (wrong, missed) == ([], [])
    assert precision == 1.0 and recall == 1.0
