"""Archivers and compressors: what they create, replace and delete.

* ``tar`` (old-style ``tar cf x.tar …`` clusters too): creating, appending or
  deleting members writes the archive; ``--remove-files`` deletes the
  sources; extracting writes each top-level member into the destination
  (``-C`` or the working directory) — the archive is read to name them, so
  a restore removes exactly what it unpacked.  An archive that cannot be
  listed (missing, unreadable, too many members, ``--transform``) widens the
  capture to the whole destination directory.
* ``unzip``: the same, from the zip's member list; ``zip`` writes its
  archive (``-m`` also deletes what it packs).
* ``gzip``/``bzip2``/``xz``/``zstd``/``lz4``/``compress`` and their
  ``un…`` forms replace (or, with ``-k``, keep) each input and create the
  file with the suffix added or removed.
* ``7z a|u|d`` write the archive; ``7z x|e`` write into ``-o`` (or here).
"""

from __future__ import annotations

import os
import tarfile
import zipfile

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
from preimage.layer.deciding.rules import Rule
from preimage.layer.decision import Finding, Impact
from preimage.layer.reading.argv import Args, parse_args
from preimage.layer.reading.shell import SimpleCommand, resolve
from preimage.layer.reading.words import Word

_MAX_MEMBERS = 2000
_MAX_LIST_BYTES = 256 * 1024 * 1024
_TAR_VALUE_LETTERS = set("fbCKNTXgLVHI")
_TAR_VALUE_OPTS = ["-f", "--file", "-C", "--directory", "-b", "--blocking-factor", "-K",
                   "--starting-file", "-N", "--newer", "--after-date", "-T", "--files-from",
                   "-X", "--exclude-from", "-g", "--listed-incremental", "-L", "--tape-length",
                   "-V", "--label", "-H", "--format", "-I", "--use-compress-program",
                   "--exclude", "--transform", "--xform", "--strip-components", "--owner",
                   "--group", "--mode", "--mtime", "--suffix", "--checkpoint-action", "--to-command",
                   "--index-file", "--newer-mtime", "--sort", "--warning", "--occurrence",
                   "--backup", "--record-size", "--quoting-style", "--rmt-command", "--rsh-command",
                   "--volno-file", "--info-script", "--new-volume-script"]


def _tar_args(words: list[Word]) -> Args:
    """tar's arguments, with an old-style first cluster (``cvzf x.tar``) turned into options."""
    if words and not words[0].text.startswith("-") and words[0].text.isalpha():
        cluster, rest = words[0].text, list(words[1:])
        converted: list[Word] = []
        for letter in cluster:
            converted.append(Word(f"-{letter}"))
            if letter in _TAR_VALUE_LETTERS and rest:
                converted.append(rest.pop(0))
        words = converted + rest
    return parse_args(words, _TAR_VALUE_OPTS)


def _paths_or_unknown(cmd: SimpleCommand, rule: Rule, words: list[Word]) -> list[str] | Finding:
    paths, dynamic, _ = expand_paths(cmd, words)
    if dynamic:
        return unknown(cmd, rule, f"`{cmd.name}` names paths only the running shell knows",
                       forced_by=dynamic_words(cmd, words))
    return paths


def _members(archive: str, kind: str) -> list[str] | None:
    """Names of an archive's members, or ``None`` when it cannot (or should not) be listed."""
    try:
        if os.path.getsize(archive) > _MAX_LIST_BYTES:
            return None
        if kind == "zip":
            with zipfile.ZipFile(archive) as z:
                names = z.namelist()
        else:
            with tarfile.open(archive) as t:
                names = []
                for m in t:
                    names.append(m.name)
                    if len(names) > _MAX_MEMBERS:
                        return None
    except (OSError, tarfile.TarError, zipfile.BadZipFile, EOFError, ValueError):
        return None
    return names if len(names) <= _MAX_MEMBERS else None


def _landing(members: list[str], dest: str, strip: int = 0) -> list[str]:
    """The top-level paths ``members`` land on under ``dest`` (after ``--strip-components``)."""
    out: list[str] = []
    for name in members:
        parts = [p for p in name.lstrip("/").split("/") if p and p != "."][strip:]
        if not parts or ".." in parts:
            continue
        top = os.path.join(dest, parts[0])
        if top not in out:
            out.append(top)
    return out


def _extract_finding(cmd: SimpleCommand, rule: Rule, ctx: Context, archive: str | None,
                     kind: str, dest: str, strip: int = 0, exact: bool = True) -> Finding:
    members = _members(archive, kind) if archive and exact else None
    if members is None:
        f = finding(cmd, rule, impact=Impact.NORMAL, wide=True,
                    targets=file_targets([dest], ctx, f"{cmd.name} unpacks into it",
                                         include_absent=True),
                    outside_workspace=outside(ctx, [dest]))
        f.notes.append(f"`{cmd.name}`: the archive's members cannot be listed before it runs; "
                       f"the whole destination {dest} is captured")
        f.forced_by.append(f"archive `{archive or 'from standard input'}`")
        return f
    paths = _landing(members, dest, strip)
    exists = any(os.path.lexists(p) for p in paths)
    return finding(cmd, rule, impact=Impact.HIGH if exists else Impact.LOW,
                   targets=file_targets(paths, ctx, f"{cmd.name} unpacks it", include_absent=True),
                   outside_workspace=outside(ctx, paths))


@shell_extractor("tar")
def tar(cmd: SimpleCommand, rule: Rule, ctx: Context) -> Finding:
    """``tar`` in any mode (see the module docstring)."""
    args = _tar_args(cmd.words[1:])
    archive_word = args.value("-f", "--file")
    archive = None
    if archive_word and archive_word != "-":
        got = _paths_or_unknown(cmd, rule, [Word(archive_word)])
        if isinstance(got, Finding):
            return got
        archive = got[0]
    if args.has("-x", "--extract", "--get"):
        if args.has("-O", "--to-stdout", "--to-command"):
            return finding(cmd, rule, impact=Impact.NONE)
        dest = resolve(cmd, args.value("-C", "--directory") or ".")
        strip = args.value("--strip-components")
        exact = not args.has("--transform", "--xform", "-P", "--absolute-names")
        return _extract_finding(cmd, rule, ctx, archive, "tar", dest,
                                int(strip) if strip and strip.isdigit() else 0, exact)
    writes = args.has("-c", "--create", "-r", "--append", "-u", "--update", "-A", "--catenate",
                      "--concatenate", "--delete")
    if not writes:
        return finding(cmd, rule, impact=Impact.NONE)  # -t, -d: read the archive
    paths = [archive] if archive else []
    if args.has("--remove-files"):
        got = _paths_or_unknown(cmd, rule, args.positionals)
        if isinstance(got, Finding):
            return got
        paths += got
    existing = bool(archive and os.path.lexists(archive))
    return finding(cmd, rule, impact=Impact.HIGH if existing else Impact.LOW,
                   targets=file_targets(paths, ctx, "tar writes it", include_absent=True),
                   outside_workspace=outside(ctx, paths))


_SUFFIX = {"gzip": ".gz", "gunzip": ".gz", "zcat": ".gz", "bzip2": ".bz2", "bunzip2": ".bz2",
           "xz": ".xz", "unxz": ".xz", "lzma": ".lzma", "unlzma": ".lzma", "zstd": ".zst",
           "unzstd": ".zst", "lz4": ".lz4", "unlz4": ".lz4", "compress": ".Z",
           "uncompress": ".Z", "pigz": ".gz", "unpigz": ".gz", "pbzip2": ".bz2", "pixz": ".xz"}
_KEEPS_INPUT = {"zstd", "unzstd", "lz4", "unlz4"}


@shell_extractor("compress")
def compress(cmd: SimpleCommand, rule: Rule, ctx: Context) -> Finding:
    """Compressors: each input replaced (or kept) and its compressed or plain twin written."""
    args = parse_args(cmd.words[1:], ["-S", "--suffix", "-o", "--output", "-T", "--threads",
                                      "-b", "-B", "-p", "--processes", "-L", "-F", "--format",
                                      "-C", "--check", "-M", "--memlimit"])
    if args.has("-c", "--stdout", "--to-stdout", "-l", "--list", "-t", "--test"):
        return finding(cmd, rule, impact=Impact.NONE)
    name = cmd.name
    decompress = name.startswith("un") or args.has("-d", "--decompress", "--uncompress")
    suffix = args.value("-S", "--suffix") or _SUFFIX.get(name, ".gz")
    if name in ("xz", "unxz") and args.value("-F", "--format") in ("lzma", "alone"):
        suffix = ".lzma"
    got = _paths_or_unknown(cmd, rule, args.positionals)
    if isinstance(got, Finding):
        return got
    if not got:
        return finding(cmd, rule, impact=Impact.NONE)  # a filter: stdin to stdout
    keeps = (name in _KEEPS_INPUT and not args.has("--rm")) or args.has("-k", "--keep")
    out_opt = args.value("-o", "--output")
    paths = [] if keeps else list(got)
    if name in ("lz4", "unlz4") and len(got) == 2:  # lz4 IN OUT
        got, out_opt = got[:1], got[1]
        paths = [] if keeps else list(got)
    if args.has("-r", "--recursive"):
        paths = list(got)  # every file below is replaced by its twin
    elif out_opt:
        paths.append(resolve(cmd, out_opt))
    else:
        for p in got:
            if decompress:
                paths.append(p[:-len(suffix)] if p.endswith(suffix) else
                             p[:-4] + ".tar" if p.endswith(".tgz") else p + ".out")
            else:
                paths.append(p + suffix)
    return finding(cmd, rule, impact=Impact.HIGH if not keeps else Impact.LOW, wide=args.has("-r"),
                   targets=file_targets(paths, ctx, f"{name} replaces or writes it",
                                        include_absent=True),
                   outside_workspace=outside(ctx, paths))


@shell_extractor("zip")
def zip_(cmd: SimpleCommand, rule: Rule, ctx: Context) -> Finding:
    """``zip ARCHIVE FILES…``: the archive (``.zip`` added when it has no suffix); ``-m`` moves."""
    args = parse_args(cmd.words[1:], ["-b", "-n", "-t", "-tt", "-x", "-i", "-P", "--password",
                                      "-O", "--output-file", "-Z", "-s", "-sp"])
    if args.has("-T", "--test", "-sf", "--show-files") or not args.positionals:
        return finding(cmd, rule, impact=Impact.NONE)
    got = _paths_or_unknown(cmd, rule, args.positionals)
    if isinstance(got, Finding):
        return got
    archive = got[0] if os.path.splitext(got[0])[1] else got[0] + ".zip"
    paths = [resolve(cmd, args.value("-O", "--output-file") or archive)]
    if args.value("-O", "--output-file"):
        paths.append(archive)
    if args.has("-m", "--move"):
        paths += got[1:]
    return finding(cmd, rule, impact=Impact.HIGH if os.path.lexists(archive) else Impact.LOW,
                   targets=file_targets(paths, ctx, "zip writes it", include_absent=True),
                   outside_workspace=outside(ctx, paths))


@shell_extractor("unzip")
def unzip(cmd: SimpleCommand, rule: Rule, ctx: Context) -> Finding:
    """``unzip ARCHIVE [-d DIR]``: every top-level member it writes."""
    args = parse_args(cmd.words[1:], ["-d", "-x", "-P"])
    if args.has("-l", "-v", "-t", "-Z", "-p", "-c", "-z") or not args.positionals:
        return finding(cmd, rule, impact=Impact.NONE)
    got = _paths_or_unknown(cmd, rule, args.positionals[:1])
    if isinstance(got, Finding):
        return got
    archive = got[0] if os.path.exists(got[0]) else got[0] + ".zip"
    dest = resolve(cmd, args.value("-d") or ".")
    exact = len(args.positionals) == 1 and not args.has("-j")
    return _extract_finding(cmd, rule, ctx, archive, "zip", dest, exact=exact)


@shell_extractor("sevenzip")
def sevenzip(cmd: SimpleCommand, rule: Rule, ctx: Context) -> Finding:
    """``7z a|u|d ARCHIVE`` write the archive; ``7z x|e ARCHIVE [-oDIR]`` write into DIR."""
    words = [w for w in cmd.words[1:] if not w.text.startswith("-")]
    if len(words) < 2:
        return finding(cmd, rule, impact=Impact.NONE)
    verb = words[0].text
    if verb in ("l", "t", "i", "h", "b"):
        return finding(cmd, rule, impact=Impact.NONE)
    got = _paths_or_unknown(cmd, rule, words[1:2])
    if isinstance(got, Finding):
        return got
    if verb in ("x", "e"):
        out = next((w.text[2:] for w in cmd.words if w.text.startswith("-o")), ".")
        return _extract_finding(cmd, rule, ctx, None, "7z", resolve(cmd, out or "."))
    archive = got[0]
    if not os.path.splitext(archive)[1]:  # 7z names it after the archive type it writes
        kind = next((w.text[2:] for w in cmd.words if w.text.startswith("-t")), "") or "7z"
        got = [archive, f"{archive}.{kind}"]
    return finding(cmd, rule, impact=Impact.HIGH,
                   targets=file_targets(got, ctx, "7z writes it", include_absent=True),
                   outside_workspace=outside(ctx, got))
