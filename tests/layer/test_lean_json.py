"""The hook path's JSON (``_json`` alone) against the standard library's ``json``."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest

from preimage.services import lean_json

DOCS = [
    {"op": "hook", "harness": "claude-code", "args": ["--mode", "safe"], "cwd": "/p q",
     "env": {"HOME": "/h", "LANG": "C.UTF-8"}, "n": 3, "f": 2.5, "ok": True, "none": None},
    {"text": "é ü \u2028 \"quoted\" back\\slash\nnew\ttab \x00 😀", "nested": [[], {}, [1, [2]]]},
    {"big": 10**30, "neg": -7, "zero": -0.0, "tiny": 1e-300, "huge": 1.5e300},
    [1, "two", 3.0, False], "just a string", 42, 0.1, None, True,
]


@pytest.mark.parametrize("doc", DOCS)
def test_dumps_and_loads_match_the_standard_library(doc: object) -> None:
    """dumps gives json.dumps's text and loads reads it back as json.loads does."""
    text = json.dumps(doc)
    assert lean_json.dumps(doc) == text
    assert lean_json.loads(text) == json.loads(text)
    assert lean_json.loads(text.encode()) == json.loads(text)
    assert lean_json.loads(f" \n{text}\t\r\n") == json.loads(text)


@pytest.mark.parametrize("bad", ["", "   ", "{", '{"a": 1,}', "{} x", "nul", "[1 2]", "'a'"])
def test_loads_refuses_what_json_refuses(bad: str) -> None:
    """Text that is not exactly one JSON value raises ValueError, as json.loads does."""
    with pytest.raises(ValueError):
        json.loads(bad)
    with pytest.raises(ValueError):
        lean_json.loads(bad)


def test_dumps_refuses_what_json_cannot_write() -> None:
    """An object JSON cannot hold raises TypeError instead of being written half."""
    with pytest.raises(TypeError):
        lean_json.dumps({"a": object()})


def test_the_hook_client_imports_neither_json_nor_socket() -> None:
    """`preimage hook`'s client loads no json, socket, re or enum on its way to the service."""
    code = ("import sys; import preimage.services.hook_client; "
            "print(sorted(m for m in ('json', 'socket', 're', 'enum', 'typing') "
            "if m in sys.modules))")
    out = subprocess.run([sys.executable, "-S", "-c", code], capture_output=True, text=True,
                         check=True, env={"PYTHONPATH": ":".join(p for p in sys.path if p)})
    assert out.stdout.strip() == "[]"


def test_loads_refuses_broken_objects_without_the_json_module() -> None:
    """In a process that never imported `json` (the hook's), a broken object or array is a
    ValueError like any other bad text, not an internal error."""
    code = ("from preimage.services import lean_json\n"
            "for bad in ['{oops', '{\"a\": 1,', '[1, ]', '{\"a\" 1}']:\n"
            "    try:\n"
            "        lean_json.loads(bad)\n"
            "    except ValueError:\n"
            "        print('refused')\n")
    out = subprocess.run([sys.executable, "-S", "-c", code], capture_output=True, text=True,
                         check=True, env={"PYTHONPATH": ":".join(p for p in sys.path if p)})
    assert out.stdout.split() == ["refused"] * 4, out.stdout + out.stderr
