"""JSON for the hook's path, from the C accelerator alone.

``import json`` costs the hook process ``re``, ``enum``, ``functools`` and
``collections`` (≈ 25 ms of a hook's start under load) for two regular expressions it
uses only in its pure-Python fallbacks.  The C functions behind ``json.dumps`` and
``json.loads`` live in the builtin ``_json`` module, which imports nothing; this module
calls them with the arguments ``json`` itself passes, so the text is the same:
``dumps(x) == json.dumps(x)`` and ``loads(s) == json.loads(s)`` for the documents the
hook and the decision service exchange (``tests/services/test_lean_json.py`` checks it
against ``json``).
"""

from __future__ import annotations

import _json

TYPE_CHECKING = False  # typing is not imported: this is the hook's path
if TYPE_CHECKING:
    from typing import Any

_WHITESPACE = " \t\n\r"


class _Defaults:
    """What ``json.JSONDecoder()`` hands the scanner: its default options."""

    strict = True
    object_hook = None
    object_pairs_hook = None
    parse_float = float
    parse_int = int
    memo: dict[str, str] = {}

    @staticmethod
    def parse_constant(name: str) -> float:
        return {"-Infinity": -float("inf"), "Infinity": float("inf"), "NaN": float("nan")}[name]


def _unserializable(value: object) -> object:
    raise TypeError(f"Object of type {type(value).__name__} is not JSON serializable")


def dumps(value: Any) -> str:
    """``json.dumps(value)`` (default separators, ASCII output, no ``default``)."""
    if isinstance(value, str):
        return str(_json.encode_basestring_ascii(value))
    encode = _json.make_encoder({}, _unserializable, _json.encode_basestring_ascii, None,
                                ": ", ", ", False, False, True)
    if not isinstance(value, (dict, list, tuple)):
        value = [value]   # the C encoder wants a container; take the item back out below
        return "".join(encode(value, 0))[1:-1]
    return "".join(encode(value, 0))


def loads(text: str | bytes) -> Any:
    """``json.loads(text)``.  Raises :class:`ValueError` for text that is not one JSON value."""
    if isinstance(text, (bytes, bytearray)):
        text = text.decode("utf-8")
    start = len(text) - len(text.lstrip(_WHITESPACE))
    scan = _json.make_scanner(_Defaults)  # type: ignore[arg-type]  # typeshed wants an instance of itself
    try:
        value, end = scan(text, start)
    except StopIteration as exc:
        raise ValueError(f"Expecting value at char {exc.value}") from None
    except SystemError:
        # Inside an object or array the scanner reports an error through
        # json.decoder.JSONDecodeError, which it looks up as it raises; with ``json`` not
        # imported that lookup fails and the call returns NULL with no exception set.
        raise ValueError("not one JSON value") from None
    finally:
        _Defaults.memo.clear()
    if text[end:].strip(_WHITESPACE):
        raise ValueError(f"Extra data at char {end}")
    return value
