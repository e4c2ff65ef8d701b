"""Observed capture: back up what a call actually changes, by watching its file system calls.

A supervised call runs under a seccomp user-notification filter; before each
syscall that would change a file, the supervisor records the before-image of
exactly that path, resolved as the kernel resolves it.  See docs/layer.md.
"""

from preimage.observe.api import Observer, observing
from preimage.observe.kernel import status_line, unavailable_reason
from preimage.observe.supervisor import (
    Outcome,
    SupervisionUnavailable,
    run_command,
    run_function,
)

__all__ = ["Observer", "Outcome", "SupervisionUnavailable", "observing", "run_command",
           "run_function", "status_line", "unavailable_reason"]
