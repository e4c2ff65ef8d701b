"""Secrets out: one place that scrubs text and payloads before they are kept or shown.

Everything an agent's tool call carries can hold a credential: a URI with
``user:password@``, ``PGPASSWORD=… psql``, ``curl -u user:pw``, ``mysql -pPW``,
``--password=…``, an ``Authorization:`` header, ``?password=`` or
``?access_token=`` in a URL, a JSON field named ``password`` or ``api_key``.
Those are found by the flag or name that carries them.  A credential whose issuer
gives it a recognisable shape — an AWS key ID, ``sk-ant-…``, a GitHub, GitLab, Slack,
Stripe, npm or Hugging Face token, a JWT, a PEM private key — is found by that shape
wherever it stands, bare in an ``echo`` or inside a word.
:func:`redact` scrubs a string and :func:`redact_value` a JSON-like payload;
the catalog (tool calls, labels), every error message the CLI prints, and the
hook log go through them.  A secret is replaced by ``***``; what surrounds it
stays, so a reader still sees what the call did.
"""

from __future__ import annotations

import functools
import re
from typing import Any

MASK = "***"

# names whose value is a secret, in query strings, JSON keys, headers and env vars
SECRET_NAMES = (
    "password", "passwd", "pwd", "pass", "secret", "token", "apikey", "api_key", "api-key",
    "access_key", "access_token", "auth_token", "refresh_token", "client_secret",
    "private_key", "secret_key", "session_token", "authorization", "cookie", "credentials",
)
_NAME = r"[A-Za-z0-9_.-]*?(?:" + "|".join(re.escape(n) for n in SECRET_NAMES) + r")[A-Za-z0-9_-]*"

# Every rule: (pattern, replacement), compiled by _rules() when a text first needs them.
_RULE_SOURCES: list[tuple[str, str]] = [
    # scheme://user:password@host
    (r"(?P<pre>\b[a-zA-Z][a-zA-Z0-9+.-]*://[^/\s:@'\"]*):[^@\s/'\"]*@",
     rf"\g<pre>:{MASK}@"),
    # Authorization: Bearer xxx / Basic xxx ; X-Api-Key: xxx ; Cookie: a=b
    (r"(?i)(?P<pre>\b(?:proxy-)?authorization\s*:\s*)(?:(?:bearer|basic|token|digest)\s+)?"
     r"[^\s'\"]+",
     rf"\g<pre>{MASK}"),
    (r"(?i)(?P<pre>\b(?:x-[a-z-]*(?:key|token|secret)|cookie)\s*:\s*)[^'\"\n]+",
     rf"\g<pre>{MASK}"),
    # NAME=value for env assignments and query strings (PGPASSWORD=…, ?password=…, &token=…)
    (rf"(?i)(?P<pre>(?:^|[\s?&;'\"(]|\bexport\s+){_NAME}=)(?:'[^']*'|\"[^\"]*\"|[^\s&;'\"]+)",
     rf"\g<pre>{MASK}"),
    # --password=xxx / --password xxx / --token xxx / --api-key xxx
    (rf"(?i)(?P<pre>--{_NAME}(?:=|\s+))(?:'[^']*'|\"[^\"]*\"|[^\s'\"]+)",
     rf"\g<pre>{MASK}"),
    # curl -u user:pw / --user user:pw  (the user stays)
    (r"(?P<pre>(?:^|\s)(?:-u|--user)\s*['\"]?[^\s:'\"]+):[^\s'\"]+", rf"\g<pre>:{MASK}"),
    # mysql -pSECRET (no space: the password), its MariaDB names, sshpass -p SECRET
    (r"(?P<pre>\b(?:mysql|mariadb)(?:dump|admin|import|-dump|-admin|-import|sh)?\b"
     r"[^\n|;&]*?\s-p)(?!\s)[^\s'\"]+", rf"\g<pre>{MASK}"),
    (r"(?P<pre>\bsshpass\s+-p\s*)[^\s'\"]+", rf"\g<pre>{MASK}"),
    # the password flags of clients that take one: redis-cli -a, docker/podman login -p,
    # sqlcmd/bcp/osql -P
    (r"(?P<pre>\bredis-cli\b[^\n|;&]*?\s-a\s*)[^\s'\"]+", rf"\g<pre>{MASK}"),
    (r"(?P<pre>\b(?:docker|podman|buildah|skopeo|helm\s+registry)\s+login\b"
     r"[^\n|;&]*?\s-p\s*)[^\s'\"]+", rf"\g<pre>{MASK}"),
    (r"(?P<pre>\b(?:sqlcmd|bcp|osql)\b[^\n|;&]*?\s-P\s*)[^\s'\"]+",
     rf"\g<pre>{MASK}"),
    # kubectl create secret … --from-literal=KEY=VALUE: every value of a secret is one
    (r"(?P<pre>--from-literal[=\s]+['\"]?[^=\s'\"]+=)(?:'[^']*'|\"[^\"]*\"|[^\s'\"]+)",
     rf"\g<pre>{MASK}"),
    # aws configure set aws_secret_access_key VALUE (and any secret-named setting)
    (rf"(?i)(?P<pre>\bconfigure\s+set\s+{_NAME}\s+)[^\s'\"]+", rf"\g<pre>{MASK}"),
    # a header whose name says secret: api-key:, Private-Token:, X-Auth-Token: …
    (rf"(?i)(?P<pre>(?:^|[\s'\"]){_NAME}\s*:\s+)(?!\*\*\*)[^\s'\",}}]+",
     rf"\g<pre>{MASK}"),
    # "password": "xxx" inside JSON text
    (rf"(?i)(?P<pre>[\"']{_NAME}[\"']\s*:\s*)(?:\"[^\"]*\"|'[^']*'|[^\s,}}]+)",
     rf'\g<pre>"{MASK}"'),
]

# Credentials by their issuer's format, wherever they stand (bounded by what cannot be
# part of the token).  Each is replaced whole.
_SHAPE_SOURCE = "|".join([
    r"\b(?:AKIA|ASIA|AGPA|AIDA|AROA|ANPA|ANVA|AIPA)[0-9A-Z]{16}\b",    # AWS access key IDs
    r"\bsk-ant-[a-z0-9]+-[A-Za-z0-9_-]{20,}",                            # Anthropic
    r"\bsk-(?:proj-|svcacct-|admin-)?[A-Za-z0-9_-]{20,}",                  # OpenAI
    r"\bgh[pousr]_[A-Za-z0-9]{36,}",                                     # GitHub
    r"\bgithub_pat_[A-Za-z0-9_]{22,}",
    r"\bgl(?:pat|ptt|dt|rt|cbt|imt|oas|ft|sa|soat)-[A-Za-z0-9_-]{20,}",  # GitLab
    r"\bglagent-[A-Za-z0-9_-]{20,}",
    r"\bxox[abposre]-[A-Za-z0-9-]{10,}",                                 # Slack
    r"hooks\.slack\.com/services/[A-Za-z0-9/_-]+",
    r"\b(?:sk|rk)_(?:live|test)_[A-Za-z0-9]{10,}",                       # Stripe
    r"\bAIza[0-9A-Za-z_-]{35}",                                          # Google API keys
    r"\bnpm_[A-Za-z0-9]{36}",                                           # npm
    r"\bpypi-AgE[A-Za-z0-9_-]{50,}",                                     # PyPI
    r"\bhf_[A-Za-z0-9]{30,}",                                           # Hugging Face
    r"\bSG\.[A-Za-z0-9_-]{22}\.[A-Za-z0-9_-]{43}",                       # SendGrid
    r"\beyJ[A-Za-z0-9_-]{8,}\.eyJ[A-Za-z0-9_-]{8,}\.[A-Za-z0-9_-]*",     # JWT
])
# Literal pieces every shape above starts with: a text holding none of them (most do
# not) skips the alternation, which costs more than all these substring tests.
_SHAPE_MARKERS = ("AKIA", "ASIA", "AGPA", "AIDA", "AROA", "ANPA", "ANVA", "AIPA", "sk-",
                  "ghp_", "gho_", "ghu_", "ghs_", "ghr_", "github_pat_", "glpat-", "glptt-",
                  "gldt-", "glrt-", "glcbt-", "glimt-", "gloas-", "glft-", "glsa-", "glsoat-",
                  "glagent-", "xox", "hooks.slack.com", "_live_", "_test_", "AIza", "npm_",
                  "pypi-", "hf_", "SG.", "eyJ")
# A PEM private key, armour and all (scanners take the armour line for the key).
_PEM_SOURCE = (r"(?P<head>-----BEGIN [A-Z0-9 ]*PRIVATE KEY(?: BLOCK)?-----)"
               r"(?P<body>.*?)(?P<tail>-----END [A-Z0-9 ]*PRIVATE KEY(?: BLOCK)?-----|\Z)")

# Every rule above needs one of these to match: a ``:`` or ``=``, a ``--``/``-p``/``-a``/
# ``-P`` flag, or ``configure``.  A text with none of them (a tool name, a tier, most of
# a log line's values) skips the fifteen substitutions.
_RULES_NEED = re.compile(r"[:=]|-[-paP]|(?i:configure)")


@functools.cache
def _rules() -> list[tuple[re.Pattern[str], str]]:
    """The rules, compiled once a text needs them: compiling all of them takes 10 to 20 ms,
    which a command whose label is empty and whose URIs hold no password never needs."""
    return [(re.compile(pattern), repl) for pattern, repl in _RULE_SOURCES]


@functools.cache
def _shapes() -> re.Pattern[str]:
    return re.compile(_SHAPE_SOURCE)


@functools.cache
def _pem() -> re.Pattern[str]:
    return re.compile(_PEM_SOURCE, re.DOTALL)


@functools.cache
def _secret_key() -> re.Pattern[str]:
    return re.compile(rf"(?i)^{_NAME}$")


def compile_rules() -> None:
    """Compile every pattern now: a long-lived process does, so the processes it forks
    (one per hook call) never compile them."""
    _rules(), _shapes(), _pem(), _secret_key()

# A number under a plural such as ``model_tokens`` or ``max_tokens`` counts tokens; it is
# not one (a secret-named key with any other value, numbers included, is still masked).
_COUNT_KEY = re.compile(r"(?i)(?:^|[_.-])tokens$")


def redact(text: str) -> str:
    """``text`` with every credential it holds replaced by ``***``."""
    if not text:
        return text
    if "PRIVATE KEY" in text:
        text = _pem().sub(MASK, text)
    if any(marker in text for marker in _SHAPE_MARKERS):
        text = _shapes().sub(MASK, text)
    if _RULES_NEED.search(text) is None:
        return text
    for pattern, repl in _rules():
        text = pattern.sub(repl, text)
    return text


def is_secret_name(name: str) -> bool:
    """Whether a field, header, variable or parameter called ``name`` holds a secret."""
    return bool(_secret_key().match(name))


def _is_count(name: str, value: Any) -> bool:
    return (isinstance(value, int | float) and not isinstance(value, bool)
            and bool(_COUNT_KEY.search(name)))


def redact_value(value: Any, *, depth: int = 0) -> Any:
    """A copy of a JSON-like ``value`` with secrets masked: values under secret-named
    keys, and credentials inside every string.  Nesting deeper than 64 levels is
    cut (a payload built to exhaust the stack keeps nothing past it)."""
    if depth > 64:
        return "…"
    if isinstance(value, str):
        return redact(value)
    if isinstance(value, dict):
        return {
            k: (MASK if isinstance(k, str) and is_secret_name(k) and v not in (None, "")
                and not _is_count(k, v) else redact_value(v, depth=depth + 1))
            for k, v in value.items()
        }
    if isinstance(value, list | tuple):
        return [redact_value(v, depth=depth + 1) for v in value]
    return value
