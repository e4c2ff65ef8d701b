"""The backup layer's execution audit over the full corpora: misses, unnecessary captures, bytes.

Run: python benchmarks/bench_layer_audit.py [--corpus tldr|sql|all] [--sample] [--supervised]
     [--tools rm,git]
     [--limit N] [--shard I/N] [--ids FILE] [--skip done.jsonl …] [--json results.jsonl]
     [--resume results.jsonl]  (a stopped run goes on where it stopped, appending)
     [--workdir DIR] [--verify-detector] [--no-restore-check]
     python benchmarks/bench_layer_audit.py --report a.jsonl b.jsonl …   (the table of runs
     written with --json, e.g. the shards of one corpus run in parallel; a call found in
     several files counts as in the last, so a re-run of chosen calls goes last)

* tldr: every command example of the tldr pages (common + linux) whose
  program is installed here runs in a bubblewrap sandbox after the layer's
  backup; examples whose program is missing are counted as not run.
* sql: the statements of PostgreSQL's regression suite (the extract in
  tests/layer/corpus/postgres-regress) run one call at a time against a
  scratch database on a throw-away server, through the layer's MCP
  ``execute_sql`` path; pg_dump is the oracle.

Prints the table that docs/layer.md shows (miss rate must be 0) and every
miss with what changed outside the backup.  ``--sample`` runs only the
fixed CI sample; ``--write-sample N`` regenerates it.
"""

from __future__ import annotations

import argparse
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "fixtures"))

from layer_audit import report, tldr  # noqa: E402
from layer_audit.shell import CallResult, ShellAudit  # noqa: E402

from preimage import Store  # noqa: E402

SAMPLE = ROOT / "tests" / "layer" / "corpus" / "tldr" / "ci-sample.txt"
# Programs whose every example is in the CI sample: the ones that delete, move or rewrite files.
CORE = ("rm", "rmdir", "mv", "cp", "ln", "mkdir", "touch", "chmod", "truncate", "shred", "tee",
        "dd", "sed", "awk", "tar", "gzip", "gunzip", "zip", "unzip", "find", "sort", "split",
        "patch", "install", "rsync", "sqlite3", "git", "xargs", "rename", "csplit")


def sample_ids() -> list[str]:
    """The CI sample (ids of examples), as committed."""
    return [ln.split("\t")[0] for ln in SAMPLE.read_text().splitlines()
            if ln.strip() and not ln.startswith("#")]


def write_sample(examples: list[tldr.Example], audit: ShellAudit, n: int) -> None:
    """Examples whose program runs here, page by page in rounds (one example per page per
    round, pages in a fixed hash order): 45% from the pages of the CORE programs that delete,
    move or rewrite files, 25% from git's pages, the rest from every other page."""
    import hashlib

    def key(text: str) -> str:
        return hashlib.sha256(text.encode()).hexdigest()

    runnable = [e for e in examples if audit.available(tldr.instantiate(e, str(audit.work)))]
    pages: dict[str, list[tldr.Example]] = {}
    for e in runnable:
        pages.setdefault(f"{e.platform}/{e.page}", []).append(e)
    def program_of(page: str) -> str:
        return tldr.program(pages[page][0].template)

    core = sorted((p for p in pages if program_of(p) in CORE and program_of(p) != "git"), key=key)
    git = sorted((p for p in pages if program_of(p) == "git"), key=key)
    other = sorted((p for p in pages if p not in core and p not in git), key=key)

    def rounds(names: list[str], budget: int) -> list[tldr.Example]:
        out: list[tldr.Example] = []
        depth = 0
        while len(out) < budget and any(len(pages[p]) > depth for p in names):
            for p in names:
                if len(pages[p]) > depth and len(out) < budget:
                    out.append(pages[p][depth])
            depth += 1
        return out

    chosen = rounds(core, n * 45 // 100)
    chosen += rounds(git, n * 25 // 100)
    chosen += rounds(other, n - len(chosen))
    lines = ["# The tldr examples the CI sample runs (id, then the template), regenerated with",
             "# python benchmarks/bench_layer_audit.py --corpus tldr --write-sample N"]
    lines += [f"{e.id}\t{e.template}" for e in sorted(chosen, key=lambda e: e.index)]
    SAMPLE.write_text("\n".join(lines) + "\n")
    print(f"wrote {len(chosen)} examples to {SAMPLE}")


def run_tldr(args: argparse.Namespace, workdir: Path) -> list[CallResult]:
    store = Store(workdir / "store")
    audit = ShellAudit(workdir / "tldr", store, supervised=args.supervised)
    examples = tldr.load()
    if args.write_sample:
        write_sample(examples, audit, args.write_sample)
        return []
    if args.sample:
        wanted = set(sample_ids())
        examples = [e for e in examples if e.id in wanted]
    if args.tools:
        tools = set(args.tools.split(","))
        examples = [e for e in examples if tldr.program(e.template) in tools or e.page in tools]
    if args.ids:
        wanted = set(args.ids.read_text().split())
        examples = [e for e in examples if e.id in wanted]
    if args.not_ids:
        unwanted = set(args.not_ids.read_text().split())
        examples = [e for e in examples if e.id not in unwanted]
    skip = [*(args.skip or []), *([args.resume] if args.resume and args.resume.exists() else [])]
    if skip:
        done = {r.id for p in skip for r in report.load(p)}
        examples = [e for e in examples if e.id not in done]
    if args.limit:
        examples = examples[:args.limit]
    if args.shard:
        i, n = (int(x) for x in args.shard.split("/"))
        examples = [e for k, e in enumerate(examples) if k % n == i - 1]
    results = []
    started = time.perf_counter()
    for i, e in enumerate(examples):
        command = tldr.instantiate(e, str(audit.work))
        r = audit.audit(e.id, tldr.program(command), command)
        results.append(r)
        if args.sink:
            args.sink.write(report.line(r))
            args.sink.flush()
        if r.missed:
            print(report.misses([r]), flush=True)
        if args.progress and (i + 1) % args.progress == 0:
            ran = sum(x.status == "ran" for x in results)
            print(f"... {i + 1}/{len(examples)} examples, {ran} run, "
                  f"{time.perf_counter() - started:.0f} s", file=sys.stderr, flush=True)
    return results


def run_sql(args: argparse.Namespace, workdir: Path) -> list[CallResult]:
    from layer_audit import sql

    if args.write_sample:
        print(f"wrote {sql.write_sample()} calls to the SQL CI sample")
        return []
    def sink(r: CallResult) -> None:
        if args.sink:
            args.sink.write(report.line(r))
            args.sink.flush()

    return sql.run_corpus(workdir / "sql", sample=args.sample, files=args.files,
                          limit=args.limit, progress=args.progress, on_result=sink,
                          shard=args.shard, verify_detector=args.verify_detector,
                          restore_check=not args.no_restore_check,
                          ids=args.ids.read_text().split() if args.ids else None)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawTextHelpFormatter)
    ap.add_argument("--corpus", choices=["tldr", "sql", "all"], default="all")
    ap.add_argument("--sample", action="store_true", help="only the fixed CI sample")
    ap.add_argument("--supervised", action="store_true",
                    help="tldr: observe each call's syscalls (preimage run) instead of reading it")
    ap.add_argument("--tools", help="only these programs or tldr pages (comma list)")
    ap.add_argument("--files", help="only these regression files (comma list, sql corpus)")
    ap.add_argument("--limit", type=int, default=0)
    ap.add_argument("--json", type=Path, help="write every call's result here (JSON lines)")
    ap.add_argument("--workdir", type=Path)
    ap.add_argument("--progress", type=int, default=200, help="print progress every N calls")
    ap.add_argument("--write-sample", type=int, default=0, metavar="N")
    ap.add_argument("--shard", metavar="I/N", help="only every N-th example, from the I-th (tldr); "
                    "the I-th of N sets of whole files of about as many calls (sql)")
    ap.add_argument("--verify-detector", action="store_true",
                    help="sql: dump after every call and check the change detector against it")
    ap.add_argument("--no-restore-check", action="store_true",
                    help="sql: do not restore each backup to check it")
    ap.add_argument("--ids", type=Path, help="only the example ids listed in this file (tldr; "
                    "sql: file#call, the calls before them run unaudited)")
    ap.add_argument("--not-ids", type=Path, help="leave out the example ids listed in this file")
    ap.add_argument("--skip", type=Path, nargs="+", metavar="JSONL",
                    help="leave out examples already in these results (resume a stopped run)")
    ap.add_argument("--resume", type=Path, metavar="JSONL",
                    help="tldr: go on with a stopped run — leave out the examples already in "
                    "JSONL and append the new results to it")
    ap.add_argument("--report", type=Path, nargs="+", metavar="JSONL",
                    help="print the tables of results written by --json (a call in several "
                    "files counts as in the last); run nothing")
    args = ap.parse_args()
    # a run stopped with kill still stops the server it started and keeps what it wrote
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(143))
    if args.report:  # a call in a later file (a re-run after a fix) replaces the earlier one
        latest = {(r.corpus, r.id): r for p in args.report for r in report.load(p)}
        sys.exit(print_report(list(latest.values())))
    if args.resume:
        args.json = args.resume
        _drop_cut_line(args.resume)
    # a resumed run appends: what the stopped run wrote stays (killed mid-line: that call
    # is not in the file, and runs again)
    args.sink = (open(args.json, "a" if args.resume else "w")  # noqa: SIM115 - closed below
                 if args.json else None)
    workdir = args.workdir or Path(tempfile.mkdtemp(prefix="preimage-layer-audit-"))
    workdir.mkdir(parents=True, exist_ok=True)
    load = subprocess.run(["uptime"], capture_output=True, text=True, check=False).stdout.strip()
    started = time.perf_counter()
    results: list[CallResult] = []
    try:
        if args.corpus in ("tldr", "all"):
            got = run_tldr(args, workdir)
            if got:
                print(report.table(got, title="tldr pages (common + linux)"))
            results += got
        if args.corpus in ("sql", "all"):
            got = run_sql(args, workdir)
            if got:
                print(report.table(got, title="PostgreSQL regression statements"))
            results += got
    finally:
        if args.sink:
            args.sink.close()
        if args.json and results and not args.resume:
            report.dump(results, args.json)
        if not args.workdir:
            shutil.rmtree(workdir, ignore_errors=True)
    print(f"\n{time.perf_counter() - started:.0f} s; load before the run: {load}")
    if any(r.missed for r in results):
        print(f"{sum(bool(r.missed) for r in results)} calls MISSED state", file=sys.stderr)
        sys.exit(1)


def _drop_cut_line(path: Path) -> None:
    """A run killed while writing leaves its last line cut short: drop it (that call runs
    again), so appended lines start on a line of their own."""
    if not path.exists():
        return
    with open(path, "rb+") as fh:
        data = fh.read()
        if data and not data.endswith(b"\n"):
            fh.truncate(data.rfind(b"\n") + 1)


def print_report(results: list[CallResult]) -> int:
    """The tables of earlier runs, per corpus; exit status 1 when any call missed state."""
    for corpus, title in (("tldr", "tldr pages (common + linux)"),
                          ("postgres-regress", "PostgreSQL regression statements")):
        got = [r for r in results if r.corpus == corpus]
        if got:
            print(report.table(got, title=title))
            if corpus == "postgres-regress":
                print(report.table(got, title=f"{title}, per regression file", top=100,
                                   key=report.by_file, column="file"))
            print(report.misses(got))
    return 1 if any(r.missed for r in results) else 0


if __name__ == "__main__":
    main()
