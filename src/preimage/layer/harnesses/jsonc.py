"""JSON with comments, as harnesses read their settings (Gemini CLI's ``settings.json``
accepts ``//`` and ``/* */`` comments and trailing commas, through strip-json-comments).

:func:`loads` drops the comments and the trailing commas outside strings and parses the
rest as JSON; everything else (a bare word, a missing brace) is still an error.
"""

from __future__ import annotations

import json
import re
from typing import Any

__all__ = ["loads", "strip"]

# A string (kept whole, so a "//" inside one — a URL — is never taken for a comment), or
# what is dropped: a comment in the first pass, a comma before a closing bracket in the next.
_COMMENTS = re.compile(r'"(?:\\.|[^"\\])*"|//[^\n]*|/\*.*?\*/', re.S)
_TRAILING = re.compile(r'"(?:\\.|[^"\\])*"|,(?=\s*[}\]])')


def _keep_strings(match: re.Match[str]) -> str:
    token = match.group(0)
    return token if token.startswith('"') else "\n" * token.count("\n")


def strip(text: str) -> str:
    """``text`` without its comments and trailing commas (line breaks kept, so a parse
    error still names the right line)."""
    return _TRAILING.sub(_keep_strings, _COMMENTS.sub(_keep_strings, text))


def loads(text: str) -> Any:
    """Parse JSON that may hold comments and trailing commas.  Raises :class:`ValueError`."""
    return json.loads(strip(text))
