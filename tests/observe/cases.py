"""Shell calls the command-line reading got wrong, in the kinds the issue lists, written
for the supervised tests: each changes the seeded tree of :func:`seed` in some way.

``(kind, id, command)``; commands run with ``bash -c`` in ``work/`` with
``HOME=home/``.  The tree's layout is in :func:`seed`.
"""

from __future__ import annotations

import os
import subprocess
import tarfile
from pathlib import Path

CASES: list[tuple[str, str, str]] = [
    # shell state a reader does not imitate
    ("shell", "alias", "shopt -s expand_aliases\nalias del='rm -f'\ndel notes.txt"),
    ("shell", "function", 'f() { rm -rf "$1"; }; f src'),
    ("shell", "trap", "trap 'rm -f README.md' EXIT; echo hi"),
    ("shell", "subst-arg", 'echo "$(rm data/a.csv; echo x)" >/dev/null'),
    ("shell", "subst-redirect", 'echo hi > "$(echo docs)/new.md"'),
    ("shell", "eval", "eval \"$(printf 'rm %s' src/util.py)\""),
    ("shell", "ifs", 'IFS=,; x="src/main.py,docs/guide.md"; rm $x'),
    ("shell", "dotglob", "shopt -s dotglob; rm -rf build/*"),
    ("shell", "globstar", "shopt -s globstar; rm -f **/*.md"),
    ("shell", "brace", "rm -f {src,docs}/*.py"),
    ("shell", "heredoc", "cat > src/gen.py <<'EOF'\nprint(1)\nEOF"),
    ("shell", "subshell-cd", "(cd docs && rm guide.md)"),
    ("shell", "pushd", "pushd src >/dev/null; mv util.py util2.py; popd >/dev/null"),
    ("shell", "xargs", "printf 'src/main.py\\0' | xargs -0 rm"),
    ("shell", "source", "echo 'rm -f data/b.csv' > s.sh; . ./s.sh"),
    ("shell", "exec-fd", "exec 3>notes2.txt; echo x >&3"),
    ("shell", "set-args", 'set -- src/*; rm "$@"'),
    ("shell", "var-cmd", 'c=rm; $c -r docs'),
    ("shell", "noclobber-off", "set -C; set +C; echo x > README.md"),
    # paths the kernel resolves differently from the text
    ("dotdot", "rm", "rm cfg/../settings.ini"),
    ("dotdot", "create", "echo x > cfg/../new.ini"),
    ("dotdot", "mv", "mv cfg/../settings.ini cfg/../settings.bak"),
    ("dotdot", "touch-up2", "touch cfg/../../app2"),
    ("dotdot", "rm-r", "rm -r cfg/../deep"),
    ("dotdot", "cd-P", "cd -P cfg/.. && rm settings.ini"),
    # writes through a symlink
    ("symlink", "append", "echo more >> link.txt"),
    ("symlink", "cp-onto", "cp src/main.py link.txt"),
    ("symlink", "truncate", "truncate -s 0 link.txt"),
    ("symlink", "chmod", "chmod 600 link.txt"),
    ("symlink", "tee", "echo t | tee link.txt >/dev/null"),
    ("symlink", "sed-i", "sed -i 's/project/PROJECT/' link.txt"),
    ("symlink", "dd", "dd if=/dev/zero of=link.txt bs=1 count=3 conv=notrunc status=none"),
    ("symlink", "dangling", "echo x > dangling"),
    ("symlink", "outside", "echo x > homelink"),
    ("symlink", "touch", "touch -d 2001-01-01 link.txt"),
    ("symlink", "ln-sf", "ln -sf README.md docs/guide.md"),
    # programs whose writes hide in an argument, option, configuration or subcommand
    ("program", "sort-o", "sort -r -o data/a.csv data/a.csv"),
    ("program", "find-delete", "find . -name '*.log' -delete"),
    ("program", "find-exec", "find src -name '*.py' -exec rm {} +"),
    ("program", "tar-c-rm", "tar -cf data.tar data && rm -r data"),
    ("program", "tar-x", "tar -xf seed.tar"),
    ("program", "python", "python3 -c \"import pathlib; pathlib.Path('src/main.py')"
                          ".write_text('x')\""),
    ("program", "awk", "awk '{print > \"awk.out\"}' README.md"),
    ("program", "install", "install -m 600 README.md docs/inst.md"),
    ("program", "split", "split -l 1 README.md part_"),
    ("program", "perl-i", "perl -i -pe 's/e/E/' src/util.py"),
    ("program", "make", "make -s clean"),
    ("program", "git-init", "git init -q . && git add -A && git -c user.name=a "
                            "-c user.email=a@b commit -qm x"),
    ("program", "sqlite", "sqlite3 data/app.db 'delete from t'"),
    ("program", "ln-hard", "ln README.md hard2"),
    ("program", "mkfifo", "mkfifo pipe1"),
    ("program", "setfattr", "setfattr -n user.k -v v README.md"),
    ("program", "cp-a", "cp -a src src2"),
    ("program", "mv-dir", "mv src docs/"),
    ("program", "chmod-R", "chmod -R go-rwx docs"),
    ("program", "touch-dir", "touch -d 2001-01-01 docs"),
    ("program", "env-config", "GIT_CONFIG_GLOBAL=data/cfg git config --global a.b c"),
    # hard links
    ("hardlink", "append", "echo more >> data/h1"),
    ("hardlink", "rm", "rm data/h2"),
    ("hardlink", "mv", "mv data/h1 data/h3"),
    ("hardlink", "sed-i", "sed -i 's/linked/LINKED/' data/h2"),
    ("hardlink", "link", "link README.md data/readme-link"),
    # state deep in the home directory
    ("home", "deep-append", "echo x >> ~/.config/app/a/b/c/d/e/deep.ini"),
    ("home", "rm-config", "rm -rf ~/.config"),
    ("home", "git-config", "git config --global user.name Z"),
    ("home", "mkdir-p", "mkdir -p ~/.local/share/x/y && echo 1 > ~/.local/share/x/y/z"),
    ("home", "bashrc", "echo 'alias ll=ls' >> ~/.bashrc"),
    # parent directories' times after a restore
    ("parent", "rm-rf", "rm -rf docs"),
    ("parent", "rm-file", "rm src/util.py"),
    ("parent", "create-remove", "touch newfile && rm newfile"),
    ("parent", "rename-back", "mv README.md R && mv R README.md"),
]

OLD = 1_000_000_000   # every seeded path's times, so that any change of them shows


def seed(box: Path) -> None:
    """``box/home`` (deep configuration) and ``box/work`` (the project)."""
    home, work = box / "home", box / "work"
    deep = home / ".config" / "app" / "a" / "b" / "c" / "d" / "e"
    for d in (deep, home / ".config" / "app" / "deep", work / "src", work / "docs",
              work / "data", work / "build" / ".cache", work / "logs"):
        d.mkdir(parents=True)
    files = {
        home / ".bashrc": "export EDITOR=true\n",
        home / ".gitconfig": "[user]\n\tname = Test\n\temail = t@example.org\n",
        home / "notes.txt": "remember the milk\n",
        home / ".config" / "app" / "settings.ini": "[main]\nverbose = false\n",
        home / ".config" / "app" / "deep" / "x.ini": "x = 1\n",
        deep / "deep.ini": "depth = 6\n",
        work / "README.md": "# project\n\nA small project.\n",
        work / "notes.txt": "todo\n",
        work / "src" / "main.py": "import util\n\nprint(util.greet('world'))\n",
        work / "src" / "util.py": "def greet(name):\n    return f'hello {name}'\n",
        work / "docs" / "guide.md": "# guide\n",
        work / "data" / "a.csv": "id,name\n1,a\n2,b\n",
        work / "data" / "b.csv": "id\n1\n",
        work / "data" / "h1": "linked\n",
        work / "build" / "out.bin": "binary",
        work / "build" / ".cache" / "c": "cache",
        work / "logs" / "x.log": "log line\n",
        work / "Makefile": "clean:\n\trm -rf build logs\n",
    }
    for path, text in files.items():
        path.write_text(text)
    os.link(work / "data" / "h1", work / "data" / "h2")
    (work / "data" / "secret").write_text("s\n")
    (work / "data" / "secret").chmod(0o600)
    (work / "src" / "main.py").chmod(0o755)
    os.setxattr(work / "notes.txt", "user.origin", b"seed")
    subprocess.run(["sqlite3", str(work / "data" / "app.db"),
                    "create table t(id integer primary key, v text); "
                    "insert into t(v) values ('a'), ('b');"], check=True)
    os.symlink("README.md", work / "link.txt")
    os.symlink("nowhere.txt", work / "dangling")
    os.symlink("../home/notes.txt", work / "homelink")
    os.symlink("../home/.config/app/deep", work / "cfg")
    os.mkfifo(work / "fifo")
    staged = box / "staged"
    staged.mkdir()
    (staged / "README.md").write_text("from the archive\n")
    (staged / "extra.txt").write_text("extra\n")
    with tarfile.open(work / "seed.tar", "w") as tar:
        for name in ("README.md", "extra.txt"):
            tar.add(staged / name, arcname=name)
    for path in (staged / "README.md", staged / "extra.txt"):
        path.unlink()
    staged.rmdir()
    for root, dirs, names in os.walk(box, topdown=False):
        for name in [*names, *dirs]:
            os.utime(os.path.join(root, name), ns=(OLD, OLD), follow_symlinks=False)
    os.utime(box, ns=(OLD, OLD))


def ran_on(loop: str, said: str) -> bool:
    """Whether an outcome's ``loop`` (``said``) is the supervisor loop a test asked for."""
    return said == "compiled" if loop == "compiled" else said.startswith("the Python loop")
