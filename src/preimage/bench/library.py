"""The scenarios a run chooses from: the built-in YAML files, the generated regret suite
(:mod:`preimage.bench.tasks`) and a user's own folders, each id once."""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from importlib import resources
from pathlib import Path

from preimage.bench.scenario import Scenario, parse_scenario
from preimage.bench.tasks import regret_tasks
from preimage.interface.errors import UsageError


def _builtin_files() -> Iterator[tuple[str, str]]:
    root = resources.files("preimage.bench") / "scenarios"
    for entry in sorted(root.iterdir(), key=lambda e: e.name):
        if entry.name.endswith((".yaml", ".yml")):
            yield f"scenarios/{entry.name}", entry.read_text(encoding="utf-8")


def load_scenarios(extra_dirs: Iterable[Path] = (), *, builtin: bool = True) -> list[Scenario]:
    """The built-in scenarios plus every ``*.yaml`` in ``extra_dirs``, ordered by id.

    A scenario id given twice is an error naming both files (a user file does
    not silently replace a built-in one: give it a new id).
    """
    found: dict[str, Scenario] = {}
    sources: list[tuple[str, str]] = list(_builtin_files()) if builtin else []
    for d in extra_dirs:
        if not d.is_dir():
            raise UsageError(f"--scenarios {d}: not a directory")
        for path in sorted([*d.glob("*.yaml"), *d.glob("*.yml")]):
            sources.append((str(path), path.read_text(encoding="utf-8")))
    parsed = [parse_scenario(text, origin) for origin, text in sources]
    if builtin:
        parsed += regret_tasks()
    for sc in parsed:
        origin = sc.origin
        if sc.id in found:
            raise UsageError(
                f"scenario {sc.id} is defined twice: {found[sc.id].origin} and {origin}"
            )
        found[sc.id] = sc
    return sorted(found.values(), key=lambda s: _order(s.id))


def _order(scenario_id: str) -> tuple[int, str]:
    return _CATEGORY_ORDER.get(scenario_id[:1], 9), scenario_id


_CATEGORY_ORDER = {"T": 0, "S": 1, "K": 2, "E": 3, "B": 4}
