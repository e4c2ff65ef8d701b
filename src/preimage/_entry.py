"""The ``preimage`` console entry point.

``preimage hook …`` runs before every tool call an agent makes, so it takes
a path that imports only the standard library (:mod:`preimage.layer.hook_client`);
``preimage trash …`` (what a rewritten ``rm`` runs) is kept light too.  Every
other command goes to the full command line in :mod:`preimage.cli`.
"""

from __future__ import annotations

import sys


def main() -> None:
    """Dispatch on the first argument before anything heavy is imported."""
    command = sys.argv[1] if len(sys.argv) > 1 else ""
    if command == "hook":
        from preimage.layer.hook_client import main as hook_main

        hook_main(sys.argv[2:])
        return
    if command == "trash":
        from preimage._trash import main as trash_main

        trash_main(sys.argv[2:])
        return
    from preimage.cli import main as cli_main

    cli_main()


if __name__ == "__main__":
    main()
