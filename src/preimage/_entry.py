"""The ``preimage`` console entry point.

``preimage hook …`` runs before every tool call an agent makes, so it takes
a path that imports only the standard library (:mod:`preimage.services.hook_client`);
``preimage trash …`` (what a rewritten ``rm`` runs) is kept light too.  Every
other command goes to the full command line in :mod:`preimage.cli.main` — in the warm
process (:mod:`preimage.services.warm`) when it serves the command, else in this one.
"""

from __future__ import annotations

import contextlib
import os
import sys


def main() -> None:
    """Dispatch on the first argument before anything heavy is imported."""
    command = sys.argv[1] if len(sys.argv) > 1 else ""
    if command == "hook":
        from preimage.services.hook_client import main as hook_main

        hook_main(sys.argv[2:])
        return
    if command == "trash":
        from preimage.engine.trash import main as trash_main

        trash_main(sys.argv[2:])
        return
    _no_pydantic_plugins()
    from preimage.services.warm import run_served

    served = run_served(sys.argv[1:])
    if served is not None:
        os._exit(served)
    _exit(run_cli())


def serve_warm() -> None:
    """The warm process's program (started detached by the first command it could serve):
    it imports the command line and the drivers once, then forks a child per command."""
    _no_pydantic_plugins()
    from preimage.cli.output import warm_console
    from preimage.interface.redact import compile_rules
    from preimage.interface.registry import BUILTINS
    from preimage.services.call_process import walk_capture_path
    from preimage.services.decision_service import idle_seconds
    from preimage.services.warm import serve

    preload = ["preimage.cli.main", "preimage.engine.capture", "preimage.engine.restore",
               "preimage.engine.compare", "preimage.engine.undo",
               *sorted({b.path for b in BUILTINS.values()}),
               # the drivers, and what commands import when they first print or read a setting
               "psycopg", "MySQLdb", "pymysql", "sqlalchemy", "rich.console", "rich.markup",
               "rich.table", "rich.text", "rich.highlighter", "argparse", "preimage.engine.trash"]

    def warm_up() -> None:
        warm_console()
        compile_rules()
        with contextlib.suppress(Exception):   # a capture's failure is reported per command
            walk_capture_path()

    sys.exit(serve(idle_seconds(), lambda: finish(run_cli()), preload, warm_up))


def _no_pydantic_plugins() -> None:
    """Let pydantic find no plugins in preimage's own process, without looking for them.

    pydantic looks for plugins when it builds its first model: it imports
    ``importlib.metadata`` and reads the entry points of every installed distribution —
    45 to 50 ms of every command's own process, a sixth of a one-file capture.  Its one
    switch is an environment variable (``PYDANTIC_DISABLE_PLUGINS``), which would reach
    every program preimage runs; its loader's one function, ``get_plugins``, is given
    here instead, answering "none".  The Python API (preimage imported into a program)
    is left alone, and so is a process whose user set the variable (any value): it gets
    pydantic's own loader."""
    name = "pydantic.plugin._loader"
    if name in sys.modules or os.environ.get("PYDANTIC_DISABLE_PLUGINS") is not None:
        return
    import types

    def get_plugins() -> tuple[()]:
        return ()

    loader = types.ModuleType(name, "preimage's command line: no pydantic plugins")
    loader.get_plugins = get_plugins  # type: ignore[attr-defined]
    sys.modules[name] = loader


def run_cli() -> object:
    """Run the full command line on ``sys.argv``; return the code it exits with."""
    from preimage.cli.main import main as cli_main

    try:
        cli_main()
    except SystemExit as done:
        return done.code
    return None


def _exit(code: object) -> None:
    """End the process as ``sys.exit(code)`` would (see :func:`finish`)."""
    os._exit(finish(code))


def finish(code: object) -> int:
    """Do what ending the process as ``sys.exit(code)`` would, without tearing the
    interpreter down; return the exit status for ``os._exit``.

    Everything a normal exit does that anyone can see still happens — other threads
    are waited for, ``atexit`` handlers run, stdout and stderr are flushed — but the
    modules and the objects they hold (the models, the drivers: a tenth of a second
    of CPU, more than a second on a loaded machine) are not freed one by one: the
    operating system takes the memory back at once.  Every file and connection the
    command opened is closed by the command itself.
    """
    import atexit
    import threading

    if code is None:
        status = 0
    elif isinstance(code, int):
        status = code
    else:
        sys.stderr.write(f"{code}\n")
        status = 1
    current = threading.current_thread()
    for thread in threading.enumerate():
        if thread is not current and not thread.daemon:
            thread.join()
    atexit._run_exitfuncs()
    for stream in (sys.stdout, sys.stderr):
        try:
            stream.flush()
        except (OSError, ValueError):  # a reader that went away: as Python's own exit does
            status = status or 120
    return status


if __name__ == "__main__":
    main()
