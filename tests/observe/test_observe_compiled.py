"""The compiled supervisor loop: it records what the Python loop records, answers the hot
syscalls itself, and gives way to the Python loop (saying why) when it cannot be built or
loaded."""

from __future__ import annotations

import os
import shlex
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "fixtures"))
sys.path.insert(0, str(Path(__file__).resolve().parent))

from cases import CASES, seed
from layer_audit import observe

import preimage
from preimage import Store
from preimage.engine.observed_links import held_targets
from preimage.observe import compiled, run_command, status_line, unavailable_reason
from preimage.observe.supervisor import Outcome

pytestmark = pytest.mark.skipif(unavailable_reason() is not None,
                                reason=f"no supervision here: {unavailable_reason()}")

CliResult = subprocess.CompletedProcess[str]


def _held(store: Store, backup_id: str | None) -> list[str]:
    """What a backup holds, as file targets (snapshots and linked files), sorted."""
    if backup_id is None:
        return []
    return sorted(held_targets(store, store.catalog.get(backup_id)))


def _run(box: Path, command: str, store: Store) -> Outcome:
    env = {"PATH": os.environ["PATH"], "HOME": str(box / "home"), "LANG": "C.UTF-8"}
    return run_command(["bash", "-c", command], store=store, cwd=str(box / "work"), env=env,
                       log=None, post_call=False)


@pytest.mark.parametrize(("kind", "command"), [(k, c) for k, _i, c in CASES[::3]],
                         ids=[f"{k}-{i}" for k, i, _c in CASES[::3]])
def test_both_loops_record_the_same_paths(tmp_path: Path, store: Store, kind: str,
                                          command: str, monkeypatch: pytest.MonkeyPatch
                                          ) -> None:
    """The same call, run once per loop on the same tree, leaves backups holding the same
    paths (relative to the tree)."""
    held = {}
    for loop in ("python", "compiled"):
        monkeypatch.setenv("PREIMAGE_OBSERVE_LOOP", loop)
        box = tmp_path / loop
        seed(box)
        before = observe.tree_state(box)
        outcome = _run(box, command, store)
        assert outcome.returncode == 0, f"{kind}: {command!r} failed on the {loop} loop"
        after = observe.tree_state(box)

        def named(target: str, box: Path = box, before: observe.State = before,
                  after: observe.State = after) -> str:
            """A target relative to the tree; a temporary file (there neither before nor
            after the call: sed -i's randomly named one) by what it was."""
            path = target.removeprefix("file://").split("?")[0]
            rel = os.path.relpath(path, box)
            if rel not in before and rel not in after:
                return "a temporary file"
            return target.replace(str(box), "BOX")

        held[loop] = sorted(named(t) for t in _held(store, outcome.backup_id))
    assert held["compiled"] == held["python"]
    assert held["compiled"], f"{command!r} recorded nothing: not a comparison"


def test_compiled_loop_answers_a_removal_itself_and_it_restores(tmp_path: Path, store: Store,
                                                                 loop: str) -> None:
    """rm -rf of 300 files: on the compiled loop C answers nearly every syscall (each file
    linked into the trash there); on either loop the tree comes back exactly."""
    area = tmp_path / "area"   # beside the test's store, not around it
    tree = area / "tree"
    for d in range(3):
        (tree / f"d{d}").mkdir(parents=True)
        for i in range(100):
            f = tree / f"d{d}" / f"f{i}"
            f.write_bytes(os.urandom(100 + i))
            os.utime(f, ns=(1_600_000_000_000_000_123 + i, 1_500_000_000_000_000_321 + i))
    before = observe.tree_state(area)
    outcome = run_command(["rm", "-rf", str(tree)], store=store, log=None, post_call=False)
    assert outcome.returncode == 0 and not tree.exists()
    if loop == "compiled":
        assert outcome.loop == "compiled"
        assert outcome.native >= 290, (outcome.native, outcome.notified)
    else:
        assert outcome.native == 0 and outcome.loop.startswith("the Python loop")
    assert outcome.backup_id is not None
    preimage.restore(outcome.backup_id, store=store)
    assert observe.changed_paths(before, observe.tree_state(area)) == []


def _fresh_cache(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """An empty cache and no library loaded in this process (undone after the test)."""
    cache = tmp_path / "cache"
    monkeypatch.setenv("PREIMAGE_CACHE_DIR", str(cache))
    monkeypatch.delenv("PREIMAGE_OBSERVE_LOOP", raising=False)
    monkeypatch.setattr(compiled, "_loaded", {})
    return cache


def test_without_a_compiler_the_python_loop_runs_and_says_why(
        tmp_path: Path, store: Store, monkeypatch: pytest.MonkeyPatch) -> None:
    """No compiler and nothing built: the call is supervised by the Python loop, recorded
    and restorable, and the outcome and `install --list` line say why."""
    _fresh_cache(tmp_path, monkeypatch)
    monkeypatch.setattr(compiled, "compilers", list)
    assert "loop: Python (no C compiler" in status_line()
    work = tmp_path / "work"
    work.mkdir()
    (work / "f").write_text("keep\n")
    outcome = run_command(["rm", "f"], store=store, cwd=str(work), log=None, post_call=False)
    assert outcome.loop.startswith("the Python loop (no C compiler")
    assert any("Python loop (no C compiler" in line for line in outcome.summary())
    assert outcome.backup_id is not None
    preimage.restore(outcome.backup_id, store=store)
    assert (work / "f").read_text() == "keep\n"


def test_a_broken_library_gives_way_to_the_python_loop(
        tmp_path: Path, store: Store, monkeypatch: pytest.MonkeyPatch) -> None:
    """A corrupt built library is not loaded: the Python loop runs, says so, and records."""
    _fresh_cache(tmp_path, monkeypatch)
    built = compiled.library_path()
    built.parent.mkdir(parents=True)
    built.write_bytes(b"not a shared object")
    work = tmp_path / "work"
    work.mkdir()
    (work / "f").write_text("keep\n")
    outcome = run_command(["bash", "-c", "echo changed > f"], store=store, cwd=str(work),
                          log=None, post_call=False)
    assert outcome.loop.startswith("the Python loop (the compiled one did not load")
    assert outcome.backup_id is not None
    preimage.restore(outcome.backup_id, store=store)
    assert (work / "f").read_text() == "keep\n"


def test_install_list_and_run_name_the_loop(tmp_path: Path, cli: Callable[..., CliResult]
                                            ) -> None:
    """`install --list` says which loop answers syscalls; `run` says which one did."""
    env = {"PREIMAGE_SERVICE": "off"}
    listing = cli("install", "--list", cwd=tmp_path, env=env)
    assert "file changes: observed" in listing.stdout and "loop: compiled" in listing.stdout
    (tmp_path / "f").write_text("x")
    ran = cli("run", "--", "rm", "f", cwd=tmp_path, env=env)
    assert "syscalls answered by the compiled loop" in ran.stderr
    python = cli("run", "--", "touch", "g", cwd=tmp_path,
                 env={**env, "PREIMAGE_OBSERVE_LOOP": "python"})
    assert "syscalls answered by the Python loop (PREIMAGE_OBSERVE_LOOP=python)" in python.stderr


SANDBOX_SCRIPT = (
    "echo more >> kept.txt; rm old.txt; mkdir made; echo new > made/n.txt; mv moved.txt "
    "made/; rm -rf tree; echo hidden > ../private/p.txt; ln -s kept.txt link; true")


def test_both_loops_record_the_same_paths_in_a_sandbox(tmp_path: Path, store: Store,
                                                       monkeypatch: pytest.MonkeyPatch) -> None:
    """A call in another mount namespace (bubblewrap, the project bound in, a private
    tmpfs beside it) leaves the same backup on both loops — the same paths held, the same
    write in the private mount named as not captured — and the compiled loop answers the
    removals of the sandboxed `rm -rf` itself instead of handing every syscall back."""
    held, uncaptured, native = {}, {}, {}
    for loop in ("python", "compiled"):
        monkeypatch.setenv("PREIMAGE_OBSERVE_LOOP", loop)
        box = tmp_path / loop
        work = box / "work"
        (work / "tree").mkdir(parents=True)
        (box / "private").mkdir()
        for name in ("kept.txt", "old.txt", "moved.txt"):
            (work / name).write_text(f"{name}\n")
        for i in range(40):
            (work / "tree" / f"f{i}").write_text(f"{i}\n")
        sandbox = ["bwrap", "--die-with-parent", "--unshare-user", "--unshare-pid",
                   "--bind", "/", "/", "--dev", "/dev", "--proc", "/proc",
                   "--tmpfs", str(box / "private"), "--chdir", str(work), "--"]
        outcome = run_command([*sandbox, "bash", "-c", SANDBOX_SCRIPT], store=store, log=None,
                              post_call=False)
        assert outcome.returncode == 0, f"the sandboxed call failed on the {loop} loop"
        assert not (box / "private" / "p.txt").exists()   # it went to the sandbox's tmpfs
        held[loop] = [t.replace(str(box), "BOX") for t in _held(store, outcome.backup_id)]
        uncaptured[loop] = sorted(u.replace(str(box), "BOX").split(": ")[0]
                                  for u in outcome.uncaptured)
        native[loop] = outcome.native
        preimage.restore(outcome.backup_id, store=store)
        assert (work / "old.txt").read_text() == "old.txt\n"
        assert len(list((work / "tree").iterdir())) == 40
    assert held["compiled"] == held["python"] and held["python"]
    assert uncaptured["compiled"] == uncaptured["python"]
    assert any("BOX/private/p.txt" in u for u in uncaptured["python"]), uncaptured
    assert native["python"] == 0 and native["compiled"] >= 40, native


BOUND_SCRIPT = (
    "echo changed >> bound.txt; truncate -s 0 decoy/g.txt; "
    "{python} -c 'import os\n"
    "for p in (\"decoy/f.txt\", \"only/inside/h.txt\"):\n"
    "    os.fchmod(os.open(p, os.O_RDONLY), 0o600)'")


def test_a_file_bound_over_in_a_sandbox_is_not_taken_for_the_one_outside(
        tmp_path: Path, store: Store, monkeypatch: pytest.MonkeyPatch) -> None:
    """In a sandbox where a file, and a folder, are bound over names that exist outside, a
    write to the bound file, a truncate and an fchmod through a descriptor are named as not
    captured on both loops, the same way, and the other files at those paths outside are
    neither held nor touched by the call or by the restore."""
    held, uncaptured = {}, {}
    for loop in ("python", "compiled"):
        monkeypatch.setenv("PREIMAGE_OBSERVE_LOOP", loop)
        box = tmp_path / loop
        work, real = box / "work", box / "real"
        (work / "decoy").mkdir(parents=True)
        (work / "only" / "inside").mkdir(parents=True)   # empty here: h.txt is only there
        real.mkdir()
        (work / "bound.txt").write_text("outside\n")
        (box / "other.txt").write_text("other\n")
        (work / "kept.txt").write_text("kept\n")
        for name in ("f.txt", "g.txt"):
            (work / "decoy" / name).write_text(f"decoy {name}\n")
        for name in ("f.txt", "g.txt", "h.txt"):
            (real / name).write_text(f"real {name}\n")
        sandbox = ["bwrap", "--die-with-parent", "--unshare-user", "--unshare-pid",
                   "--bind", "/", "/", "--dev", "/dev", "--proc", "/proc",
                   "--bind", str(box / "other.txt"), str(work / "bound.txt"),
                   "--bind", str(real), str(work / "decoy"),
                   "--bind", str(real), str(work / "only" / "inside"),
                   "--chdir", str(work), "--"]
        script = BOUND_SCRIPT.format(python=sys.executable) + "; echo more >> kept.txt"
        outcome = run_command([*sandbox, "bash", "-c", script], store=store, log=None,
                              post_call=False)
        assert outcome.returncode == 0, f"the sandboxed call failed on the {loop} loop"
        # the call changed the files bound in, not the ones at those paths outside
        assert (box / "other.txt").read_text() == "other\nchanged\n"
        assert (real / "g.txt").read_text() == ""
        assert (real / "f.txt").stat().st_mode & 0o777 == 0o600
        assert (work / "bound.txt").read_text() == "outside\n"
        assert (work / "decoy" / "g.txt").read_text() == "decoy g.txt\n"
        assert (work / "decoy" / "f.txt").stat().st_mode & 0o777 != 0o600
        held[loop] = [t.replace(str(box), "BOX") for t in _held(store, outcome.backup_id)]
        uncaptured[loop] = sorted((u.replace(str(box), "BOX").split(": ")[0],
                                   u.partition(", ")[2]) for u in outcome.uncaptured)
        assert any("bound over" in u for u in outcome.uncaptured), outcome.uncaptured
        preimage.restore(outcome.backup_id, store=store)
        assert (work / "kept.txt").read_text() == "kept\n"
        assert (work / "decoy" / "f.txt").read_text() == "decoy f.txt\n"
        assert (work / "bound.txt").read_text() == "outside\n"
    assert held["compiled"] == held["python"]
    assert not [t for t in held["python"] if "bound.txt" in t or "decoy/" in t or "only/" in t]
    named = {path for path, _reason in uncaptured["python"]}
    assert named >= {"BOX/work/bound.txt", "BOX/work/decoy/g.txt", "BOX/work/decoy/f.txt",
                     "BOX/work/only/inside/h.txt"}, uncaptured
    assert uncaptured["compiled"] == uncaptured["python"]


def test_a_recorded_path_bound_over_in_a_sandbox_is_still_named(
        tmp_path: Path, store: Store, monkeypatch: pytest.MonkeyPatch) -> None:
    """A folder whose tree is already held, bound over by another inside a sandbox: an
    fchmod there through a descriptor is named as not captured on both loops (the compiled
    loop does not let it through as already held)."""
    uncaptured = {}
    for loop in ("python", "compiled"):
        monkeypatch.setenv("PREIMAGE_OBSERVE_LOOP", loop)
        box = tmp_path / loop
        work, real = box / "work", box / "real"
        (work / "decoy").mkdir(parents=True)
        real.mkdir()
        (work / "decoy" / "f.txt").write_text("decoy\n")
        (real / "f.txt").write_text("real\n")
        sandbox = ["bwrap", "--die-with-parent", "--unshare-user", "--unshare-pid",
                   "--bind", "/", "/", "--dev", "/dev", "--proc", "/proc",
                   "--bind", str(real), str(work / "decoy"), "--chdir", str(work), "--"]
        fchmod = "import os; os.fchmod(os.open('decoy/f.txt', os.O_RDONLY), 0o600)"
        script = ("mv decoy d2 && mv d2 decoy && "   # the whole decoy tree is held now
                  + " ".join(shlex.quote(a) for a in [*sandbox, sys.executable, "-c", fchmod]))
        outcome = _run(box, script, store)
        assert outcome.returncode == 0, f"the call failed on the {loop} loop"
        assert (real / "f.txt").stat().st_mode & 0o777 == 0o600
        uncaptured[loop] = sorted(u.replace(str(box), "BOX").split(": ")[0]
                                  for u in outcome.uncaptured if u.startswith(str(box)))
        preimage.restore(outcome.backup_id, store=store)
        assert (work / "decoy" / "f.txt").read_text() == "decoy\n"
    assert uncaptured["python"] == ["BOX/work/decoy/f.txt"]
    assert uncaptured["compiled"] == uncaptured["python"]
