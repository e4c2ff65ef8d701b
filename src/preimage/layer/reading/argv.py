"""Reading a command's options the way most Unix tools read them.

``--name=value``, ``--name value`` (for options known to take a value),
``-abc`` clusters of single-letter flags, ``-ovalue`` and ``--`` are
understood; what remains are the positionals, kept with their index so
callers can ask whether a word was dynamic or globbed.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field

from preimage.layer.reading.words import Word


@dataclass
class Args:
    """Parsed options and positionals of one command (the program name excluded)."""

    options: list[tuple[str, str | None]] = field(default_factory=list)
    positionals: list[Word] = field(default_factory=list)

    def has(self, *names: str) -> bool:
        """Whether any of ``names`` (``-r``, ``--force``) was given."""
        return any(o in names for o, _ in self.options)

    def value(self, *names: str) -> str | None:
        """The last value given to any of ``names``."""
        found = None
        for o, v in self.options:
            if o in names and v is not None:
                found = v
        return found

    def values(self, *names: str) -> list[str]:
        """Every value given to any of ``names``, in order."""
        return [v for o, v in self.options if o in names and v is not None]

    @property
    def texts(self) -> list[str]:
        """The positionals' text."""
        return [w.text for w in self.positionals]


def parse_args(
    words: Iterable[Word],
    value_options: Iterable[str] = (),
    *,
    long_single_dash: bool = False,
    stop_at_positional: bool = False,
) -> Args:
    """Split ``words`` into options and positionals.

    ``value_options`` names the options that take a value.  With
    ``long_single_dash`` a word such as ``-name`` is one option (``find``).
    With ``stop_at_positional`` everything from the first positional on is
    positional (a subcommand's own options are left to it).
    """
    takes = set(value_options)
    out = Args()
    items = list(words)
    i = 0
    while i < len(items):
        w = items[i]
        t = w.text
        if t == "--":
            out.positionals.extend(items[i + 1:])
            break
        if t.startswith("--") and len(t) > 2:
            name, eq, val = t.partition("=")
            if eq:
                out.options.append((name, val))
            elif name in takes and i + 1 < len(items):
                out.options.append((name, items[i + 1].text))
                i += 1
            else:
                out.options.append((name, None))
        elif t.startswith("-") and len(t) > 1 and not w.dynamic and not _is_number(t):
            if long_single_dash or t in takes:
                if t in takes and i + 1 < len(items):
                    out.options.append((t, items[i + 1].text))
                    i += 1
                else:
                    out.options.append((t, None))
            else:
                for j, letter in enumerate(t[1:], start=1):
                    opt = "-" + letter
                    if opt in takes:
                        rest = t[j + 1:]
                        if rest:
                            out.options.append((opt, rest))
                        elif i + 1 < len(items):
                            out.options.append((opt, items[i + 1].text))
                            i += 1
                        else:
                            out.options.append((opt, None))
                        break
                    out.options.append((opt, None))
        else:
            out.positionals.append(w)
            if stop_at_positional:
                out.positionals.extend(items[i + 1:])
                break
        i += 1
    return out


def _is_number(t: str) -> bool:
    return t[1:].replace(".", "", 1).isdigit()
