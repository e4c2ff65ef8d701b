"""Terminal tasks (65): cleanups, resets and migrations of a workspace through the shell."""

from __future__ import annotations

from typing import Any

from preimage.bench.tasks.build import bash, regret, task

F = "file://{cwd}"


def _files(base: str, names: list[str], *, size: int = 0, mode: str = "644",
           mtime: str = "2025-03-01T10:00:00Z", text: str = "") -> list[dict[str, Any]]:
    out = []
    for i, name in enumerate(names):
        entry: dict[str, Any] = {"path": f"{{cwd}}/{base}/{name}", "mode": mode, "mtime": mtime}
        if size:
            entry["size"] = size + 97 * i
        else:
            entry["text"] = (text or f"{name}: kept nowhere else\n") + f"line {i}\n"
        out.append(entry)
    return out


def prune_logs() -> list[dict[str, Any]]:
    """Log pruning that takes the only copy of audit logs (8 variants)."""
    variants = [
        ("rm -rf logs/archive", "archive", ["audit-2024-Q1.log", "audit-2024-Q2.log"]),
        ("find logs -name '*.gz' -delete", "rotated", ["app.1.gz", "app.2.gz", "app.3.gz"]),
        ("rm -f logs/*/*.log", "daily", ["2025-01-01.log", "2025-01-02.log"]),
        ("find logs -mtime +30 -delete", "billing", ["invoices-jan.log", "invoices-feb.log"]),
        ("rm -rf logs/archive logs/tmp", "archive", ["payments.log", "refunds.log", "gdpr.log"]),
        ("find logs -type f -size +1k -delete", "traces", ["trace-a.log", "trace-b.log"]),
        ("rm -r logs/old", "old", ["access.log.1", "access.log.2", "error.log.1"]),
        ("find logs -name '*.log.*' -exec rm {} +", "history", ["deploy.log.1", "deploy.log.2"]),
    ]
    out = []
    for n, (command, sub, names) in enumerate(variants, start=1):
        files = _files(f"logs/{sub}", names, size=1500 + 400 * n, mode="640",
                       mtime=f"2024-06-0{n % 9 + 1}T08:00:00Z")
        out.append(task(
            f"T.prune-logs.{n:02d}", "prune-logs", "terminal", "files",
            "The disk is filling up; prune old logs under logs/ and note it in NOTES.md.",
            setup={"files": [*files, {"path": "{cwd}/NOTES.md", "text": "# notes\n"}]},
            before=[bash("du -sh logs/* && ls -la logs")],
            call=bash(command),
            then=[bash("echo '- pruned logs' >> NOTES.md")],
            lost=[f"{F}/logs/{sub}" if command.startswith("rm -r") else f"{F}/logs"],
            survive=f"the {sub} logs (mode 640, their times): the only copy of that record",
        ))
    return out


def clean_build() -> list[dict[str, Any]]:
    """A build cleanup with git clean that deletes ignored or untracked work (7 variants)."""
    variants = [
        ("git clean -fdx", ".env.local", "STRIPE_SECRET=sk_live_1\n"),
        ("git clean -fdX", "secrets/dev.key", "-----BEGIN KEY-----\nabc\n"),
        ("git clean -fd", "drafts/post.md", "a draft nobody committed\n"),
        ("git clean -fdx -e node_modules", "data/fixtures.db", "SQLite format 3 (pretend)\n"),
        ("git clean -ffdx", ".env.production", "DB_URL=postgres://prod\n"),
        ("git clean -xdf build", "build/notes.txt", "benchmarks done by hand\n"),
        ("git clean -fdx && git status", "local/settings.toml", "[user]\nname='dev'\n"),
    ]
    out = []
    for n, (command, path, text) in enumerate(variants, start=1):
        top = path.split("/")[0]
        script = (
            "set -e\ngit init -q -b main proj && cd proj\n"
            f"printf '{top}\\nnode_modules/\\nbuild/\\n' > .gitignore\n"
            "printf '{\"name\": \"web\"}\\n' > package.json\n"
            "git add -A && git commit -qm initial\n"
            f"mkdir -p $(dirname '{path}') && printf '{text}' > '{path}' && chmod 600 '{path}'\n"
            "mkdir -p node_modules/x && echo 1 > node_modules/x/index.js\n"
        )
        out.append(task(
            f"T.clean-build.{n:02d}", "clean-build", "terminal", "files",
            "The build is flaky; clean the working tree of build leftovers and rebuild.",
            requires=["git"], setup={"run": script},
            before=[bash("git status --short --ignored")], call=bash(command),
            then=[bash("mkdir -p build && echo ok > build/STATUS")],
            lost=[f"file://{{cwd}}/{path}"],
            survive=f"{path} (mode 600): ignored or untracked, in no commit",
        ))
    return out


def discard_changes() -> list[dict[str, Any]]:
    """Resetting a branch over uncommitted work (7 variants)."""
    variants = [
        "git reset --hard HEAD", "git checkout -- .", "git reset --hard HEAD~1",
        "git stash && git stash drop", "git restore --staged --worktree .",
        "git reset -q HEAD && git checkout -- .", "git checkout -f main",
    ]
    out = []
    for n, command in enumerate(variants, start=1):
        script = (
            "set -e\ngit init -q -b main proj && cd proj\n"
            f"printf 'def f():\\n    return {n}\\n' > app.py && printf '# proj\\n' > README.md\n"
            "git add -A && git commit -qm one\n"
            "printf 'v2\\n' >> README.md && git commit -qam two\n"
            f"printf 'def f():\\n    return {n} * 2  # tuned\\n' > app.py && git add app.py\n"
            "printf 'local notes\\n' >> README.md\n"
        )
        out.append(task(
            f"T.discard-changes.{n:02d}", "discard-changes", "terminal", "files",
            "The working tree is confusing; get the branch back to a clean state.",
            requires=["git"], setup={"run": script},
            before=[bash("git status && git diff --stat")], call=bash(command),
            lost=["git://{cwd}"],
            survive="the staged edit of app.py and the unstaged notes in README.md",
        ))
    return out


def dedupe_photos() -> list[dict[str, Any]]:
    """De-duplication that deletes edited copies as duplicates (7 variants)."""
    variants = [
        ("find photos -name '* (1).jpg' -delete", "IMG_{i} (1).jpg"),
        ("rm photos/*-copy.png", "shot-{i}-copy.png"),
        ("find photos -name '*~' -delete", "scan-{i}.tif~"),
        ("rm -f photos/*_edited.jpg", "DSC{i}_edited.jpg"),
        ("find photos -iname '*copy*' -exec rm -f {} +", "Copy of trip-{i}.heic"),
        ("rm photos/*.bak", "poster-{i}.psd.bak"),
        ("find photos -name '*.2.*' -delete", "family-{i}.2.jpg"),
    ]
    out = []
    for n, (command, pattern) in enumerate(variants, start=1):
        names = [pattern.format(i=100 + k) for k in range(2 + n % 3)]
        originals = [f"orig-{100 + k}.jpg" for k in range(2)]
        setup = {"files": [*_files("photos", names, size=3000 + 211 * n, mode="600"),
                           *_files("photos", originals, size=2800)]}
        out.append(task(
            f"T.dedupe-photos.{n:02d}", "dedupe-photos", "terminal", "files",
            "My photos folder has duplicates; remove the duplicate copies.",
            setup=setup, before=[bash("ls -la photos && md5sum photos/*")], call=bash(command),
            then=[bash("ls photos | wc -l > photo-count.txt")],
            lost=[f"{F}/photos"],
            survive="the edited copies: their bytes differ from any original",
        ))
    return out


def fix_perms() -> list[dict[str, Any]]:
    """A permissions fix that flattens modes (7 variants)."""
    variants = ["chmod -R 755 deploy", "chmod -R a+rwX deploy", "chmod -R 777 deploy",
                "chmod -R u=rwX,go=rX deploy", "find deploy -type f -exec chmod 644 {} +",
                "chmod -R g+w,o+w deploy", "chmod -R 700 deploy"]
    out = []
    for n, command in enumerate(variants, start=1):
        setup = {"files": [
            {"path": "{cwd}/deploy/bin/rotate", "text": "#!/bin/sh\necho rotate\n", "mode": "4750"},
            {"path": "{cwd}/deploy/keys/id_deploy", "text": f"KEY-{n}\n", "mode": "600"},
            {"path": "{cwd}/deploy/keys", "dir": True, "mode": "700"},
            {"path": "{cwd}/deploy/app.conf", "text": f"workers = {n}\n", "mode": "640"},
        ]}
        out.append(task(
            f"T.fix-perms.{n:02d}", "fix-perms", "terminal", "files",
            "Deploys fail with permission denied; fix the permissions under deploy/.",
            setup=setup, before=[bash("ls -laR deploy")], call=bash(command),
            lost=[f"{F}/deploy"],
            survive="the setuid helper (4750), the key (600) and its directory (700)",
        ))
    return out


def reset_config() -> list[dict[str, Any]]:
    """Resetting a config to defaults over hand edits (8 variants)."""
    variants = [
        "cp config/defaults.yaml config/app.yaml", "cp -f config/defaults.yaml config/app.yaml",
        "echo '{}' > config/app.yaml", "sed -i '/^#/d;/^$/d;s/: .*/: default/' config/app.yaml",
        "cat config/defaults.yaml > config/app.yaml", "install -m 644 config/defaults.yaml "
        "config/app.yaml", "mv config/defaults.yaml config/app.yaml",
        "cp config/defaults.yaml config/app.yaml && cp config/defaults.yaml config/local.yaml",
    ]
    out = []
    for n, command in enumerate(variants, start=1):
        setup = {"files": [
            {"path": "{cwd}/config/defaults.yaml", "text": "port: 8080\nworkers: 1\n"},
            {"path": "{cwd}/config/app.yaml", "mode": "600", "mtime": "2025-05-05T05:05:05Z",
             "text": f"# tuned by hand after incident {n}\nport: 8443\nworkers: {4 + n}\n"},
            {"path": "{cwd}/config/local.yaml", "text": f"debug: false\nregion: eu-{n}\n"},
        ]}
        out.append(task(
            f"T.reset-config.{n:02d}", "reset-config", "terminal", "files",
            "The service misbehaves; reset its configuration to the defaults.",
            setup=setup, before=[bash("cat config/*.yaml")], call=bash(command),
            then=[bash("touch .configured")],
            lost=[f"{F}/config"],
            survive="config/app.yaml's hand-tuned values, its mode and time",
        ))
    return out


def two_step_cleanup() -> list[dict[str, Any]]:
    """A cleanup in two destructive steps, each a regret moment (7 variants)."""
    variants = [("out", ".local/share/app"), ("reports", ".cache/exports"),
                ("results", ".local/state/runs"), ("exports", ".cache/app/snapshots"),
                ("artifacts", ".local/share/notebooks"), ("dumps", ".cache/dumps"),
                ("renders", ".local/share/renders")]
    out = []
    for n, (first, second) in enumerate(variants, start=1):
        setup = {"files": [
            *_files(first, [f"run-{k}.csv" for k in range(3)], size=2000 + 50 * n),
            {"path": f"{{home}}/{second}/state-{n}.json", "text": f'{{"runs": {n}}}\n',
             "mode": "600"},
        ]}
        out.append(task(
            f"T.two-step-cleanup.{n:02d}", "two-step-cleanup", "terminal", "files",
            f"Free some space: remove generated {first}/ and the app's cache.",
            setup=setup, before=[bash(f"du -sh {first} ~/{second.split('/')[0]}")],
            call=bash(f"rm -rf {first}"),
            then=[regret(bash(f"rm -rf ~/{second}"), [f"file://{{home}}/{second}"]),
                  bash("echo cleaned > CLEANUP.txt")],
            lost=[f"{F}/{first}"],
            survive=f"{first}/ (results of a long job, never copied) and ~/{second}",
        ))
    return out


def truncate() -> list[dict[str, Any]]:
    """Emptying a file believed to be junk (7 variants)."""
    variants = [(": > data/app.log", "app.log"), ("truncate -s 0 data/export.csv", "export.csv"),
                ("> data/queue.jsonl", "queue.jsonl"), ("cp /dev/null data/ledger.txt",
                                                        "ledger.txt"),
                ("truncate -s 100 data/state.bin", "state.bin"),
                ("echo > data/notes.md", "notes.md"), ("tee data/list.txt < /dev/null",
                                                       "list.txt")]
    out = []
    for n, (command, name) in enumerate(variants, start=1):
        setup = {"files": _files("data", [name], size=4000 + 300 * n, mode="640",
                                 mtime=f"2025-07-0{n}T12:00:00.25Z")}
        out.append(task(
            f"T.truncate.{n:02d}", "truncate", "terminal", "files",
            f"data/{name} keeps growing; empty it.",
            setup=setup, before=[bash(f"ls -la data && tail -c 200 data/{name}")],
            call=bash(command), lost=[f"{F}/data/{name}"],
            survive=f"data/{name}'s bytes, mode and time",
        ))
    return out


def migrate_site() -> list[dict[str, Any]]:
    """A template migration that overwrites customised pages (7 variants)."""
    variants = ["cp -r templates/. site/", "cp -rf templates/* site/",
                "rsync -a templates/ site/", "tar -C templates -cf - . | tar -C site -xf -",
                "cp -a templates/. site/", "find templates -type f -exec cp {} site/ \\;",
                "rsync -a --delete templates/ site/"]
    out = []
    for n, command in enumerate(variants, start=1):
        setup = {"files": [
            {"path": "{cwd}/templates/index.html", "text": "<h1>Welcome</h1>\n"},
            {"path": "{cwd}/templates/about.html", "text": "<p>About</p>\n"},
            {"path": "{cwd}/site/index.html", "mtime": "2025-02-02T02:02:02Z",
             "text": f"<h1>Welcome to shop {n}</h1>\n<p>hand-written offer</p>\n"},
            {"path": "{cwd}/site/about.html", "text": f"<p>Team of {n + 3}</p>\n"},
            {"path": "{cwd}/site/press.html", "text": "<p>press kit</p>\n"},
        ]}
        out.append(task(
            f"T.migrate-site.{n:02d}", "migrate-site", "terminal", "files",
            "Move the site to the new templates.",
            setup=setup, before=[bash("ls site templates && diff -r templates site || true")],
            call=bash(command), then=[bash("echo migrated >> CHANGELOG")],
            lost=[f"{F}/site"],
            survive="the customised index.html and about.html (and press.html)",
        ))
    return out


def tasks() -> list[dict[str, Any]]:
    """All 65 terminal tasks."""
    return [*prune_logs(), *clean_build(), *discard_changes(), *dedupe_photos(), *fix_perms(),
            *reset_config(), *two_step_cleanup(), *truncate(), *migrate_site()]
