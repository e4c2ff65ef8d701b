"""Tier 1: commands that delete, move over, truncate or re-mode files.

Each is made reversible by capturing, before it runs, exactly the paths it
names (globs expanded the way bash will expand them) with the ``file``
connector; ``preimage restore ID`` then puts back bytes, modes, owners,
times, xattrs and symlinks, and removes what the command created there.
"""

from __future__ import annotations

import os
from urllib.parse import unquote, urlsplit

from preimage.layer.context import Context
from preimage.layer.deciding.extract import (
    dynamic_words,
    expand_paths,
    file_targets,
    finding,
    outside,
    shell_extractor,
    unknown,
)
from preimage.layer.deciding.rm_trash import trash_rewrite
from preimage.layer.deciding.rules import Rule
from preimage.layer.decision import Finding, Impact, PlannedTarget, Tier
from preimage.layer.reading.argv import Args, parse_args
from preimage.layer.reading.shell import Redirect, SimpleCommand, resolve
from preimage.layer.reading.words import Word

_WRITE_OPS = (">", ">|", "&>", ">&", ">>", "&>>", "<>")


def _paths_finding(cmd: SimpleCommand, rule: Rule, ctx: Context, words: list[Word], why: str,
                   *, include_absent: bool = False, impact: Impact | None = None,
                   wide: bool = False) -> Finding:
    paths, dynamic, globbed = expand_paths(cmd, words)
    if dynamic:
        return unknown(cmd, rule, f"`{cmd.name}` names paths only the running shell knows",
                       forced_by=dynamic_words(cmd, words))
    targets = file_targets(paths, ctx, why, include_absent=include_absent)
    f = finding(cmd, rule, targets=targets, wide=wide or globbed,
                outside_workspace=outside(ctx, paths))
    if impact is not None:
        f.impact = impact
    if not targets:
        f.impact = Impact.NONE
        f.notes.append(f"`{cmd.name}`: nothing it names exists; nothing to protect")
    return f


@shell_extractor("remove")
def remove(cmd: SimpleCommand, rule: Rule, ctx: Context) -> Finding:
    """``rm``, ``rmdir``, ``unlink``, ``shred``: every named path."""
    args = parse_args(cmd.words[1:], rule.params.get("value_options", ["-n", "--iterations",
                                                                      "-s", "--size"]))
    recursive = args.has("-r", "-R", "--recursive")
    f = _paths_finding(cmd, rule, ctx, args.positionals, f"{cmd.name} deletes it",
                       wide=recursive)
    return trash_rewrite(cmd, f, ctx) or f  # a plain rm on the store's filesystem: rename


def _sources_and_destination(args: Args) -> tuple[list[Word], Word] | None:
    """``mv``/``cp`` operands: ``-t DIR`` and every operand a source, else the last one the
    destination; ``None`` with fewer than two operands."""
    words = args.positionals
    target_dir = args.value("-t", "--target-directory")
    if target_dir is not None:
        return words, Word(target_dir)
    if len(words) >= 2:
        return words[:-1], words[-1]
    return None


def _contents_of(text: str) -> bool:
    """Whether a source operand names a directory's contents (``dir/.``, ``.``)."""
    return text in (".", "./") or text.rstrip("/").endswith("/.")


@shell_extractor("move")
def move(cmd: SimpleCommand, rule: Rule, ctx: Context) -> Finding:
    """``mv``: the sources and what the destination would replace."""
    args = parse_args(cmd.words[1:], ["-t", "--target-directory", "-S", "--suffix"])
    split = _sources_and_destination(args)
    if split is None:
        return unknown(cmd, rule, "`mv` without a source and a destination")
    sources, dest_word = split
    return _copy_like(cmd, rule, ctx, sources, dest_word, args.has("-T"),
                      args.has("-n", "--no-clobber"), move=True)


@shell_extractor("copy")
def copy(cmd: SimpleCommand, rule: Rule, ctx: Context) -> Finding:
    """``cp``, ``install``, ``ln``: what the destination would replace or create."""
    args = parse_args(cmd.words[1:], ["-t", "--target-directory", "-S", "--suffix", "-m",
                                      "--mode", "-o", "--owner", "-g", "--group"])
    words = args.positionals
    split = _sources_and_destination(args)
    if split is None and len(words) == 1 and cmd.name == "ln":
        split = words, Word(os.path.basename(words[0].text))  # `ln -s /x/y`: ./y
    if split is None:
        return unknown(cmd, rule, f"`{cmd.name}` without a destination")
    sources, dest_word = split
    return _copy_like(cmd, rule, ctx, sources, dest_word, args.has("-T"),
                      args.has("-n", "--no-clobber"), move=False)


def _copy_like(cmd: SimpleCommand, rule: Rule, ctx: Context, sources: list[Word], dest_word: Word,
               no_target_dir: bool, no_clobber: bool, *, move: bool) -> Finding:
    src_paths, dyn1, globbed = expand_paths(cmd, sources)
    dest_paths, dyn2, _ = expand_paths(cmd, [dest_word])
    if dyn1 or dyn2 or len(dest_paths) != 1:
        return unknown(cmd, rule, f"`{cmd.name}` names paths only the running shell knows",
                       forced_by=dynamic_words(cmd, [*sources, dest_word]) or [
                           f"destination `{dest_word.text}` matching {len(dest_paths)} paths"])
    dest = dest_paths[0]
    if os.path.isdir(dest) and not os.path.islink(dest) and not no_target_dir:
        landing = [os.path.join(dest, os.path.basename(p.rstrip("/"))) for p in src_paths]
        # `cp -r dir/. dest`: a source ending in /. copies the directory's contents into
        # dest itself (its name is "."), so what it may replace is anywhere in dest.
        if any(_contents_of(w.text) for w in sources):
            landing.append(dest)
    else:
        landing = [dest]
    overwrites = [p for p in landing if os.path.lexists(p)]
    targets = file_targets(landing, ctx, f"{cmd.name} writes it", include_absent=True)
    if move:
        targets = file_targets(src_paths, ctx, "mv takes it away") + targets
    impact = Impact.HIGH if overwrites and not no_clobber else (
        Impact.NORMAL if move else Impact.LOW)
    return finding(cmd, rule, targets=targets, impact=impact, wide=globbed,
                   outside_workspace=outside(ctx, src_paths + landing if move else landing))


@shell_extractor("modes")
def modes(cmd: SimpleCommand, rule: Rule, ctx: Context) -> Finding:
    """``chmod``/``chown``/``chgrp``/``setfacl``/``chattr``/``touch``: the paths after the spec."""
    skip = int(rule.params.get("skip", 1))
    args = parse_args(cmd.words[1:], rule.params.get("value_options", ["--reference", "-m", "-x",
                                                                      "-M", "-X", "-d", "-t", "-r"]))
    if args.value("--reference") is not None:
        skip = 0
    recursive = args.has("-R", "--recursive", "-r") and cmd.name != "touch"
    f = _paths_finding(cmd, rule, ctx, args.positionals[skip:], f"{cmd.name} changes its metadata",
                       wide=recursive, include_absent=bool(rule.params.get("include_absent")))
    if recursive and f.impact is not Impact.NONE:
        f.impact = Impact.HIGH
    return f


@shell_extractor("in_place")
def in_place(cmd: SimpleCommand, rule: Rule, ctx: Context) -> Finding:
    """``sed -i``, ``perl -i``, ``ruby -i``: the files edited in place."""
    args = parse_args(cmd.words[1:], ["-e", "--expression", "-f", "--file", "-l",
                                      "--line-length", "-s", "-E"])
    has_script_opt = args.has("-e", "--expression", "-f", "--file")
    files = args.positionals if has_script_opt else args.positionals[1:]
    f = _paths_finding(cmd, rule, ctx, files, f"{cmd.name} -i rewrites it")
    suffix = in_place_suffix(cmd)
    if suffix and not f.unknown:
        backups = [backup_name(unquote(urlsplit(t.uri).path), suffix) for t in f.targets]
        f.targets += file_targets(backups, ctx, f"{cmd.name} -i{suffix} leaves this backup copy",
                                  include_absent=True)
    return f


def in_place_suffix(cmd: SimpleCommand) -> str:
    """The backup suffix of ``sed -i.bak`` / ``--in-place=.bak`` / ``perl -pi.orig`` (or "")."""
    for w in cmd.words[1:]:
        t = w.text
        if t == "--":
            break
        if t.startswith("--in-place="):
            return t.split("=", 1)[1]
        if t.startswith("-") and not t.startswith("--") and "i" in t[1:]:
            before, _, after = t[1:].partition("i")
            if before.isalpha() or not before:
                return after  # the rest of the cluster, as sed and perl read it (-ie: "e")
    return ""


def backup_name(path: str, suffix: str) -> str:
    """Where ``-iSUFFIX`` keeps the original of ``path`` (``*`` stands for its name)."""
    name = os.path.basename(path)
    if "*" in suffix:
        return os.path.join(os.path.dirname(path), suffix.replace("*", name))
    return path + suffix


@shell_extractor("truncate")
def truncate(cmd: SimpleCommand, rule: Rule, ctx: Context) -> Finding:
    """``truncate``: the files it resizes."""
    args = parse_args(cmd.words[1:], ["-s", "--size", "-r", "--reference"])
    return _paths_finding(cmd, rule, ctx, args.positionals, "truncate cuts it",
                          include_absent=False)


@shell_extractor("dd")
def dd(cmd: SimpleCommand, rule: Rule, ctx: Context) -> Finding:
    """``dd of=FILE``: the output file."""
    outs = [Word(w.text[3:], w.dynamic, w.glob) for w in cmd.words[1:] if w.text.startswith("of=")]
    if not outs:
        return finding(cmd, rule, impact=Impact.NONE)
    return _paths_finding(cmd, rule, ctx, outs, "dd overwrites it", include_absent=True)


@shell_extractor("tee")
def tee(cmd: SimpleCommand, rule: Rule, ctx: Context) -> Finding:
    """``tee FILE…``: the files it writes."""
    args = parse_args(cmd.words[1:], [])
    f = _paths_finding(cmd, rule, ctx, args.positionals, "tee writes it", include_absent=True)
    if args.has("-a", "--append") and f.impact is Impact.HIGH:
        f.impact = Impact.NORMAL
    return f


_FIND_DESTRUCTIVE = {"rm", "mv", "shred", "unlink", "truncate", "chmod", "chown", "chgrp",
                     "sed", "perl", "rmdir", "cp", "tee", "dd"}


@shell_extractor("find")
def find(cmd: SimpleCommand, rule: Rule, ctx: Context) -> Finding:
    """``find … -delete`` / ``-exec rm``: every starting point (it may touch anything below)."""
    words = cmd.words[1:]
    starts: list[Word] = []
    i = 0
    while i < len(words) and words[i].text in ("-H", "-L", "-P", "-O", "-D"):
        i += 2 if words[i].text in ("-O", "-D") else 1
    while i < len(words) and not words[i].text.startswith(("-", "(", "!", ")")):
        starts.append(words[i])
        i += 1
    expr = [w.text for w in words[i:]]
    destructive = "-delete" in expr
    writes_to: list[Word] = []   # destinations an -exec cp/mv/ln/install writes into
    writes_file = any(e in expr for e in ("-fprint", "-fprint0", "-fprintf", "-fls"))
    for j, e in enumerate(expr):
        if e in ("-exec", "-execdir", "-ok", "-okdir") and j + 1 < len(expr):
            prog = os.path.basename(expr[j + 1])
            if prog in _FIND_DESTRUCTIVE or (prog in ("sh", "bash") and "rm" in " ".join(expr)):
                destructive = True
                writes_to.extend(_exec_destination(prog, expr[j + 2:]))
            elif prog not in ("echo", "ls", "cat", "grep", "wc", "stat", "file", "head",
                              "md5sum", "sha256sum", "du", "test", "printf", "basename"):
                return unknown(cmd, rule, f"`find -exec {prog}`: the layer cannot tell what it changes")
    if not destructive and not writes_file:
        return finding(cmd, rule, tier=Tier.READ_ONLY, impact=Impact.NONE)
    starts = starts or [Word(".")]
    return _paths_finding(cmd, rule, ctx, starts + writes_to,
                          "find changes files below it (or an -exec writes into it)",
                          impact=Impact.HIGH, wide=True)


def _exec_destination(prog: str, args: list[str]) -> list[Word]:
    """The destination of ``find … -exec cp|mv|ln|install … DEST {} ;``: ``-t DIR``, else
    the last operand that is not ``{}`` (the found path is a source)."""
    if prog not in ("cp", "mv", "ln", "install"):
        return []
    operands: list[str] = []
    target = None
    i = 0
    while i < len(args) and args[i] not in (";", "+"):
        arg = args[i]
        if arg in ("-t", "--target-directory") and i + 1 < len(args):
            target = args[i + 1]
            i += 2
            continue
        if arg.startswith("--target-directory="):
            target = arg.split("=", 1)[1]
        elif not arg.startswith("-") and "{}" not in arg:
            operands.append(arg)
        i += 1
    if target is not None:
        return [Word(target)]
    return [Word(operands[-1])] if operands else []


@shell_extractor("rsync")
def rsync(cmd: SimpleCommand, rule: Rule, ctx: Context) -> Finding:
    """``rsync``: the destination (and the sources with ``--remove-source-files``)."""
    args = parse_args(cmd.words[1:], ["-e", "--rsh", "--exclude", "--include", "-f", "--filter",
                                      "--log-file", "--backup-dir", "--files-from",
                                      "--password-file", "--chmod", "--chown", "--timeout",
                                      "--port", "--compare-dest", "--link-dest", "--copy-dest",
                                      "--out-format", "-T", "--temp-dir", "--suffix", "-B",
                                      "--exclude-from", "--include-from", "--max-size",
                                      "--min-size", "--bwlimit", "--rsync-path"])
    words = args.positionals
    if len(words) < 2:
        return finding(cmd, rule, tier=Tier.READ_ONLY, impact=Impact.NONE)
    dest = words[-1]
    if ":" in dest.text.split("/", 1)[0] or dest.text.startswith("rsync://"):
        f = finding(cmd, rule, impact=Impact.NORMAL, outside_workspace=True)
        f.notes.append("rsync writes to another machine; state there is not captured")
        return f
    deleting = any(o.startswith("--delete") or o == "--del" for o, _ in args.options)
    f = _paths_finding(cmd, rule, ctx, [dest], "rsync writes into it", include_absent=True,
                       impact=Impact.HIGH if deleting else Impact.NORMAL, wide=deleting)
    if args.has("--remove-source-files"):
        src = _paths_finding(cmd, rule, ctx, words[:-1], "rsync removes the sources")
        f.targets = src.targets + f.targets
        f.impact = Impact.HIGH
    return f


@shell_extractor("into_dir")
def into_dir(cmd: SimpleCommand, rule: Rule, ctx: Context) -> Finding:
    """Archive extractors and downloaders: the directory or file they write into."""
    args = parse_args(cmd.words[1:], rule.params.get("value_options", []))
    dest = None
    for opt in rule.params.get("dest_options", []):
        dest = args.value(opt) or dest
    words = [Word(dest)] if dest else [Word(cmd.cwd)]
    return _paths_finding(cmd, rule, ctx, words, f"{cmd.name} writes into it", include_absent=True)


def wrapper_files_finding(cmd: SimpleCommand, ctx: Context) -> Finding:
    """The files a wrapper of ``cmd`` creates itself (``flock FILE cmd``)."""
    paths, dynamic, _ = expand_paths(cmd, cmd.creates)
    if dynamic:
        return Finding(source=cmd.source, tier=Tier.WORKSPACE, rule="wrapper", unknown=True,
                       impact=Impact.LOW, span=cmd.span, forced_by=dynamic_words(cmd, cmd.creates),
                       notes=["a wrapper creates a file only the running shell can name"])
    return Finding(source=cmd.source, tier=Tier.REWRITE, rule="wrapper", impact=Impact.LOW,
                   span=cmd.span, outside_workspace=outside(ctx, paths),
                   targets=file_targets(paths, ctx, "the wrapper creates it",
                                        include_absent=True))


def redirect_finding(cmd: SimpleCommand, ctx: Context) -> Finding | None:
    """Files a command's output redirections write (``> f`` truncates, ``>> f`` appends)."""
    writes: list[tuple[Redirect, str]] = []
    for r in cmd.redirects:
        if r.op not in _WRITE_OPS or r.target is None:
            continue
        if r.op == ">&" and r.target.text.isdigit():
            continue
        if r.target.dynamic:
            return Finding(source=cmd.source, tier=Tier.WORKSPACE, rule="redirect",
                           impact=Impact.NORMAL, unknown=True, span=cmd.span,
                           notes=["output goes to a file only the running shell can name"],
                           forced_by=[f"redirection target `{r.target.why or r.target.text}`"])
        writes.append((r, resolve(cmd, r.target.text)))
    if not writes:
        return None
    paths = [p for _, p in writes]
    targets: list[PlannedTarget] = file_targets(paths, ctx, "output redirection writes it",
                                                include_absent=True)
    if not targets:
        return None
    truncates = any(r.op in (">", ">|", "&>", ">&") and os.path.isfile(p) and os.path.getsize(p)
                    for r, p in writes)
    exists = any(os.path.lexists(p) for p in paths)
    impact = Impact.HIGH if truncates else (Impact.NORMAL if exists else Impact.LOW)
    return Finding(source=cmd.source, tier=Tier.REWRITE, rule="redirect", impact=impact,
                   targets=targets, span=cmd.span, outside_workspace=outside(ctx, paths))


@shell_extractor("outputs")
def outputs(cmd: SimpleCommand, rule: Rule, ctx: Context) -> Finding:
    """Readers that write a file only when an option names one (``pg_dump -f F``,
    ``mysqldump --result-file=F``, ``openssl … -out F``): read-only without it.  The
    rule's ``suffixes`` name files written beside it (``ssh-keygen -f K``: ``K.pub``)."""
    names = set(rule.params.get("output_options", []))
    words: list[Word] = []
    items = cmd.words[1:]
    for i, w in enumerate(items):
        opt, eq, val = w.text.partition("=")
        if eq and opt in names:
            words.append(Word(val, w.dynamic, w.glob, w.why))
        elif w.text in names and i + 1 < len(items):
            words.append(items[i + 1])
        elif not eq and len(opt) > 2 and opt[:2] in names and not opt.startswith("--"):
            words.append(Word(opt[2:], w.dynamic, w.glob, w.why))  # -fFILE
    words = [w for w in words if w.text != "-"]
    if not words:
        return finding(cmd, rule, tier=Tier.READ_ONLY, impact=Impact.NONE)
    words += [Word(w.text + sfx, w.dynamic, w.glob, w.why)  # files written beside it
              for sfx in rule.params.get("suffixes", []) for w in list(words)]
    f = _paths_finding(cmd, rule, ctx, words, f"{cmd.name} writes it", include_absent=True,
                       impact=Impact.NORMAL)
    if not f.unknown:
        f.tier = Tier.REWRITE
    return f
