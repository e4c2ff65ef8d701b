"""bashlex's parse table from the cache, and here-documents read a line at a time, parse
exactly as bashlex's own build and reader do."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

COMMANDS = [
    "cd build && rm -rf out; make -j4 2>&1 | tee log.txt",
    "for f in *.py; do sed -i 's/a/b/' \"$f\"; done",
    "if [ -d x ]; then mv x y; else echo none >> /tmp/log; fi",
    "psql \"$DATABASE_URL\" -c 'DROP TABLE orders' <<EOF\nselect 1;\nEOF",
    "echo $(ls $(pwd)) `date` && (cd sub; git clean -fdx) || true",
    "case $1 in a|b) rm -f \"$1\" ;; *) : ;; esac",
    "f() { rm -rf \"$@\"; }; f a b &",
    "kubectl delete ns shop --wait=false > /dev/null 2>&1 &&! false",
    "cat > gen.py <<'EOF'\nprint('a')\n  x = 1 \\\n  + 2\nEOF\necho done",
    "psql <<SQL\nDELETE FROM t WHERE a = '$X';\nSQL",
    "cat <<-END > f\n\tindented\n\tEND\nls",
    "cat <<EOF\nno terminator here\nstill none",
    "cat <<EOF\nlast line without newline\nEOF",
    "cat <<A <<B\na1\nA\nb1\nB\n",
    "cat > big.txt <<'EOF'\n" + "a line of a generated file, $HOME stays\n" * 2000 + "EOF",
]

SCRIPT = """
import json, sys
if sys.argv[1] == "cached":
    from preimage.layer.reading.bashlex_tables import install
    install()
import bashlex
out = []
for c in json.loads(sys.argv[2]):
    try:
        out.append([t.dump() for t in bashlex.parse(c)])
    except Exception as exc:
        out.append(f"{type(exc).__name__}: {exc}")
print(json.dumps(out))
"""


def _parse(mode: str, cache: Path, path: Path | None = None) -> list[object]:
    env = {**os.environ, "PREIMAGE_CACHE_DIR": str(cache)}
    if path is not None:
        env["PYTHONPATH"] = str(path)
    proc = subprocess.run([sys.executable, "-c", SCRIPT, mode, json.dumps(COMMANDS)],
                          capture_output=True, text=True, env=env, timeout=300, check=True)
    return json.loads(proc.stdout)  # type: ignore[no-any-return]


def test_cached_table_parses_like_bashlex(tmp_path: Path) -> None:
    """The first run writes the table; the second reads it; both parse as plain bashlex."""
    cache = tmp_path / "cache"
    plain = _parse("plain", cache)
    assert not cache.exists()
    first = _parse("cached", cache)
    assert len(list(cache.glob("bashlex-lalr-*.marshal"))) == 1
    second = _parse("cached", cache)
    assert first == plain and second == plain
    assert sum(isinstance(p, list) for p in plain) >= len(COMMANDS) - 4  # bashlex refuses a few


def test_corrupt_cache_falls_back_to_building(tmp_path: Path) -> None:
    """A cache file that is not a table is ignored and rewritten; parsing still works."""
    cache = tmp_path / "cache"
    _parse("cached", cache)
    (table,) = cache.glob("bashlex-lalr-*.marshal")
    table.write_bytes(b"not marshal data")
    assert _parse("cached", cache) == _parse("plain", cache)
    assert table.read_bytes() != b"not marshal data"


def test_installations_of_one_bashlex_share_one_table(tmp_path: Path) -> None:
    """Two copies of the same bashlex (two environments, files of other times) use one
    table in the cache instead of one each."""
    import shutil

    import bashlex

    cache = tmp_path / "cache"
    for n in (1, 2):
        copy = tmp_path / f"env{n}"
        shutil.copytree(Path(bashlex.__file__).parent, copy / "bashlex")
        os.utime(copy / "bashlex" / "parser.py", ns=(n * 10**18, n * 10**18))
        assert _parse("cached", cache, copy) == _parse("plain", cache, copy)
    assert len(list(cache.glob("bashlex-lalr-*.marshal"))) == 1
