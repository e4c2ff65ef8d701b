"""Tiers 1-2 for a terminal's other state: git repositories, Python environments, crontabs.

``git`` calls capture ``git:///<toplevel>`` (HEAD, refs, index, stash,
untracked and ignored files); when the git connector is not installed the
repository's tree is captured with the file connector instead.  ``git push
--force`` is rewritten to ``--force-with-lease`` so it cannot overwrite
remote commits the local repository (and so the backup) has never seen.
``pip`` calls capture ``pip:///<venv or interpreter>`` of the interpreter
the ``pip`` on the command's PATH belongs to.
"""

from __future__ import annotations

import getpass
import os
import re
import shutil

from preimage.connectors.files.address import file_uri
from preimage.connectors.git.address import git_uri
from preimage.connectors.pip.address import pip_uri
from preimage.layer.context import Context
from preimage.layer.deciding.extract import ancestors, file_targets, finding, shell_extractor, unknown
from preimage.layer.deciding.rules import Rule
from preimage.layer.deciding.side_effects import depth_uri
from preimage.layer.decision import Finding, Impact, PlannedTarget, Tier
from preimage.layer.reading.argv import Args, parse_args
from preimage.layer.reading.shell import SimpleCommand, resolve
from preimage.layer.reading.uris import crontab_uri

GIT_GLOBAL = ["-C", "-c", "--git-dir", "--work-tree", "--namespace", "--exec-path",
              "--config-env", "--super-prefix"]


def git_toplevel(start: str) -> str | None:
    """The working tree root holding ``start`` (found by walking up to ``.git``)."""
    return next((p for p in ancestors(start) if os.path.exists(os.path.join(p, ".git"))), None)


def _git_target(repo: str, why: str) -> PlannedTarget:
    return PlannedTarget(git_uri(repo), why, fallback=file_uri(repo))


@shell_extractor("git")
def git(cmd: SimpleCommand, rule: Rule, ctx: Context) -> Finding:
    """Any state-changing ``git`` subcommand: the repository it runs in."""
    pre = parse_args(cmd.words[1:], GIT_GLOBAL, stop_at_positional=True)
    where = cmd.cwd
    for opt, val in pre.options:
        if opt == "-C" and val:
            where = os.path.normpath(os.path.join(where, val))
    work_tree = pre.value("--work-tree")
    repo = os.path.normpath(os.path.join(where, work_tree)) if work_tree else git_toplevel(where)
    sub = pre.texts[:1]
    rest = parse_args(pre.positionals[1:], ["-m", "-o", "--repo", "-e", "--exclude", "-f",
                                            "--file", "--output", "--prefix", "--format",
                                            "--remote", "--type", "--default", "--blob"])
    name = sub[0] if sub else ""
    files = _git_files(cmd, name, rest, where, ctx)
    if files is not None:
        return files
    if repo is None:
        if sub == ["clone"] and len(rest.positionals) >= 1:
            dest = rest.texts[1] if len(rest.positionals) > 1 else \
                re.sub(r"\.git$", "", rest.texts[0].rstrip("/").rsplit("/", 1)[-1])
            path = resolve(cmd, os.path.join(where, dest) if not dest.startswith("/") else dest)
            return finding(cmd, rule, impact=Impact.LOW,
                           targets=file_targets([path], ctx, "git clone creates it",
                                                include_absent=True))
        if sub == ["init"]:
            dest = resolve(cmd, os.path.join(where, rest.texts[0]) if rest.texts else where)
            return finding(cmd, rule, impact=Impact.LOW,
                           targets=file_targets([os.path.join(dest, ".git")], ctx,
                                                "git init creates it", include_absent=True))
        f = finding(cmd, rule, impact=Impact.NONE)
        f.notes.append(f"`git {' '.join(sub)}` outside a repository changes nothing")
        return f
    f = finding(cmd, rule, targets=[_git_target(repo, f"git {' '.join(sub)} changes it")],
                outside_workspace=ctx.outside_workspace(repo))
    if name == "maintenance" and rest.texts[:1] in (["register"], ["unregister"], ["start"],
                                                     ["stop"]):
        f.targets += file_targets(global_git_configs(cmd, ctx), ctx,
                                  "git maintenance lists the repository in it", include_absent=True)
    if name == "worktree" and rest.texts[:1] == ["add"] and len(rest.texts) > 1:
        # a linked worktree: its directory and its private git dir under .git/worktrees
        admin = os.path.join(repo, ".git", "worktrees")
        f.targets += file_targets([resolve(cmd, os.path.join(where, rest.texts[1]))], ctx,
                                  "git worktree add creates it", include_absent=True)
        f.targets.append(PlannedTarget(depth_uri(admin, 1), "git worktree add registers it"))
    if name == "checkout":
        branchish = [w for w in rest.texts if not os.path.exists(os.path.join(where, w))]
        discards = (rest.has("-f", "--force", "-p", "--patch") or "--" in cmd.argv
                    or "." in rest.texts or (rest.texts and not branchish))
        f.impact = Impact.HIGH if discards else Impact.NORMAL
        f.tier = Tier.REWRITE if discards else Tier.PAIR
        f.wide = "." in rest.texts
    elif name == "push":
        _push(cmd, f, rest.options, rest.texts)
    elif name in ("clean", "reset") or (name == "stash" and rest.texts[:1] in (["drop"], ["clear"])):
        f.wide = name != "stash"
    return f


def global_git_configs(cmd: SimpleCommand, ctx: Context) -> list[str]:
    """The user's git configuration files (``~/.gitconfig`` and the XDG one)."""
    home = cmd.env.get("HOME") or ctx.home
    xdg = cmd.env.get("XDG_CONFIG_HOME") or os.path.join(home, ".config")
    return [os.path.join(home, ".gitconfig"), os.path.join(xdg, "git", "config")]


def _git_files(cmd: SimpleCommand, name: str, rest: Args, where: str,
               ctx: Context) -> Finding | None:
    """Subcommands that write files outside the repository's state: ``config --global``/
    ``--system``/``--file``, ``archive -o``, ``bundle create``.  ``None`` for the others."""
    from preimage.layer.deciding.rules import Rule as _Rule

    rule = _Rule(name="git-files", tier="rewrite", match={"command": ["git"]}, impact="normal")
    paths: list[str] = []
    if name == "config":
        if rest.has("--global"):
            paths = global_git_configs(cmd, ctx)
        elif rest.has("--system"):
            paths = [cmd.env.get("GIT_CONFIG_SYSTEM") or "/etc/gitconfig"]
        elif rest.value("-f", "--file"):
            paths = [resolve(cmd, os.path.join(where, rest.value("-f", "--file") or ""))]
        else:
            return None
        if rest.has("--get", "--get-all", "--get-regexp", "-l", "--list", "--get-urlmatch",
                    "--get-color", "--get-colorbool", "--show-origin", "-e", "--edit") and \
                not rest.has("-e", "--edit"):
            return finding(cmd, rule, impact=Impact.NONE)
    elif name == "archive":
        out = rest.value("-o", "--output")
        if not out:
            return finding(cmd, rule, impact=Impact.NONE)
        paths = [resolve(cmd, os.path.join(where, out))]
    elif name == "bundle" and rest.texts[:1] == ["create"] and len(rest.texts) > 1:
        paths = [resolve(cmd, os.path.join(where, rest.texts[1]))]
    else:
        return None
    return finding(cmd, rule, impact=Impact.NORMAL,
                   targets=file_targets(paths, ctx, f"git {name} writes it", include_absent=True),
                   outside_workspace=any(ctx.outside_workspace(p) for p in paths))


@shell_extractor("git_listing")
def git_listing(cmd: SimpleCommand, rule: Rule, ctx: Context) -> Finding:
    """``git branch``/``git tag``: read-only when they list, the repository when they name one
    to create (``git branch NAME``, ``git tag -a v1 -m …``)."""
    pre = parse_args(cmd.words[1:], GIT_GLOBAL, stop_at_positional=True)
    rest = parse_args(pre.positionals[1:], ["-m", "--message", "-F", "--file", "-u",
                                            "--local-user", "--contains", "--no-contains",
                                            "--merged", "--no-merged", "--points-at", "--sort",
                                            "--format", "--color", "--column", "-t", "--track"])
    listing = rest.has("-l", "--list", "-v", "-vv", "--verbose", "-r", "--remotes", "-a",
                       "--all", "--show-current", "--contains", "--no-contains", "--merged",
                       "--no-merged", "--points-at", "-n")
    if listing or not rest.positionals:
        return finding(cmd, rule, tier=Tier.READ_ONLY, impact=Impact.NONE)
    return git(cmd, rule.model_copy(update={"tier": "pair", "impact": "low"}), ctx)


def _push(cmd: SimpleCommand, f: Finding, options: list[tuple[str, str | None]],
          refspecs: list[str]) -> None:
    names = {o for o, _ in options}
    forced = bool(names & {"--force", "-f"}) or any(r.startswith("+") for r in refspecs)
    deleting = bool(names & {"--delete", "-d", "--mirror", "--prune"}) or any(
        r.startswith(":") for r in refspecs)
    f.outside_workspace = True
    if not (forced or deleting or "--force-with-lease" in names):
        f.impact = Impact.NORMAL
        return
    f.impact = Impact.HIGH
    f.tier = Tier.REWRITE
    f.notes.append("the remote's old branch tips stay in the backup (remote-tracking refs); "
                   "put one back with `git push --force-with-lease <remote> <old-sha>:<branch>`")
    if forced and "--force-with-lease" not in names and cmd.span is not None \
            and not any(r.startswith("+") for r in refspecs):
        new = re.sub(r"(?<=\s)(--force|-f)(?=\s|$)", "--force-with-lease", cmd.source, count=1)
        if new != cmd.source:
            f.rewrite = new
            f.notes.append("`--force` became `--force-with-lease`: the push now refuses to "
                           "overwrite remote commits this repository has not fetched")


def python_env(cmd: SimpleCommand, program: str | None = None) -> str | None:
    """The venv (or interpreter) a ``pip``/``python`` command acts on."""
    prog = program or cmd.words[0].text
    path = resolve(cmd, prog) if "/" in prog else shutil.which(prog, path=cmd.env.get("PATH"))
    if path:
        root = os.path.dirname(os.path.dirname(path))
        if os.path.exists(os.path.join(root, "pyvenv.cfg")):
            return root
    if cmd.env.get("VIRTUAL_ENV"):
        return cmd.env["VIRTUAL_ENV"]
    if not path:
        return None
    try:
        with open(path, "rb") as fh:
            first = fh.readline(512).decode(errors="replace")
    except OSError:
        return path
    if first.startswith("#!") and "python" in first:
        interp = first[2:].strip().split()[0]
        root = os.path.dirname(os.path.dirname(interp))
        return root if os.path.exists(os.path.join(root, "pyvenv.cfg")) else interp
    return path


def _project_venv(start: str) -> str | None:
    found = (os.path.join(p, ".venv") for p in ancestors(start))
    return next((v for v in found if os.path.exists(os.path.join(v, "pyvenv.cfg"))), None)


@shell_extractor("pip")
def pip(cmd: SimpleCommand, rule: Rule, ctx: Context) -> Finding:
    """``pip``/``python -m pip``/``uv pip``: the environment it installs into."""
    args = parse_args(cmd.words[1:], ["-t", "--target", "--prefix", "--root", "--python", "-p",
                                      "-r", "--requirement", "-c", "--constraint", "-e",
                                      "--editable", "-i", "--index-url", "--extra-index-url",
                                      "-f", "--find-links", "-m"])
    target_dir = args.value("-t", "--target", "--prefix", "--root")
    if target_dir:
        path = resolve(cmd, target_dir)
        return finding(cmd, rule, targets=file_targets([path], ctx, "pip installs into it",
                                                       include_absent=True))
    if cmd.name == "uv":
        env = args.value("--python", "-p")
        env = resolve(cmd, env) if env and "/" in env else None
        env = env or cmd.env.get("VIRTUAL_ENV") or _project_venv(cmd.cwd)
    elif cmd.name.startswith("python"):
        env = python_env(cmd)
    else:
        env = python_env(cmd)
    if env is None:
        return unknown(cmd, rule, f"`{cmd.name}`: cannot tell which Python environment it changes")
    env_dir = env if os.path.isdir(env) else None
    return finding(cmd, rule, targets=[PlannedTarget(
        pip_uri(env), "pip changes its packages", regenerable=True,
        fallback=file_uri(env_dir) if env_dir else None)],
        outside_workspace=ctx.outside_workspace(env))


@shell_extractor("python")
def python(cmd: SimpleCommand, rule: Rule, ctx: Context) -> Finding:
    """``python -m pip`` goes to pip; ``-m venv DIR`` creates DIR; scripts are unknown."""
    args = parse_args(cmd.words[1:], ["-m", "-c", "-W", "-X"], stop_at_positional=True)
    module = args.value("-m")
    if module in ("pip", "ensurepip"):
        return pip(cmd, rule, ctx)
    if module == "venv" and args.positionals:
        path = resolve(cmd, args.texts[-1])
        return finding(cmd, rule, impact=Impact.LOW,
                       targets=file_targets([path], ctx, "venv creates it", include_absent=True))
    if module in ("json.tool", "http.server", "pydoc", "site", "this", "timeit", "platform",
                  "sysconfig", "calendar", "tokenize", "ast", "dis", "py_compile"):
        return finding(cmd, rule, tier=Tier.READ_ONLY, impact=Impact.NONE)
    script = os.path.basename(args.texts[0]) if args.positionals else ""
    if script == "manage.py" and args.texts[1:2] and args.texts[1] in (
            "flush", "migrate", "reset_db", "loaddata", "sqlflush"):
        from preimage.layer.deciding.ex_sql import orm_reset

        return orm_reset(cmd, rule.model_copy(update={"impact": "high"}), ctx)
    if not cmd.argv[1:] or cmd.argv[1:2] in (["--version"], ["-V"]):
        return finding(cmd, rule, tier=Tier.READ_ONLY, impact=Impact.NONE)
    what = f"-m {module}" if module else ("-c code" if args.has("-c") else "a script")
    return unknown(cmd, rule, f"`{cmd.name} {what}` runs code the layer cannot read")


@shell_extractor("project_env")
def project_env(cmd: SimpleCommand, rule: Rule, ctx: Context) -> Finding:
    """``uv sync/add``, ``poetry add/install``: the project's venv and its manifest files."""
    venv = _project_venv(cmd.cwd)
    files = [os.path.join(cmd.cwd, n) for n in rule.params.get("files", [])]
    targets = file_targets(files, ctx, f"{cmd.name} rewrites it")
    if venv:
        targets.append(PlannedTarget(pip_uri(venv), f"{cmd.name} changes its packages",
                                     fallback=file_uri(venv), regenerable=True))
    if not targets:
        return unknown(cmd, rule, f"`{cmd.name}`: no project environment found next to {cmd.cwd}")
    return finding(cmd, rule, targets=targets)


@shell_extractor("crontab")
def crontab(cmd: SimpleCommand, rule: Rule, ctx: Context) -> Finding:
    """``crontab -r`` / ``crontab FILE`` / ``-e``: the user's crontab."""
    args = parse_args(cmd.words[1:], ["-u"])
    if args.has("-l"):
        return finding(cmd, rule, tier=Tier.READ_ONLY, impact=Impact.NONE)
    user = args.value("-u") or cmd.env.get("USER") or getpass.getuser()
    spool = f"/var/spool/cron/crontabs/{user}"
    return finding(cmd, rule, outside_workspace=True, targets=[PlannedTarget(
        crontab_uri(user), "crontab replaces or removes it", fallback=file_uri(spool))])
