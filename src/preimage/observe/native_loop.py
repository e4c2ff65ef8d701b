"""Driving the compiled loop for one listener, in step with the Python recorder.

The C side keeps a copy of what the recorder holds — its recorded trees and
directory entries, its trash folder, journal descriptor and next entry number —
because those decide which syscalls it may answer alone.  The copy is kept in step
from the recorder's side: its path sets tell this object of each new member
(:class:`preimage.observe.recorder.PathSet`), the trash is handed over before each
wait, and the files the C side linked are handed back (:meth:`Native.take_links`)
before Python does anything else, so the recorder's bookkeeping — the catalog's
trash rows at close, the backup's first ``complete`` — is the same on both paths.
A recorder replaced at a session's call boundary is followed by a reset.
"""

from __future__ import annotations

import ctypes
import os
from typing import Any

from preimage.observe import compiled
from preimage.observe.kernel import Notification, parse
from preimage.observe.recorder import Recorder


class Native:
    """One listener's compiled loop."""

    def __init__(self, lib: ctypes.CDLL, listener: int) -> None:
        self.lib = lib
        self.state = lib.fl_new(listener, b"/", None, 0, -1)
        if not self.state:
            raise MemoryError("the compiled loop could not allocate its state")
        self.recorder: Recorder | None = None
        self._answered = 0
        self._length = ctypes.c_longlong()

    def follow(self, recorder: Recorder) -> None:
        """Take over ``recorder``'s state (a no-op while it stays the same one)."""
        if recorder is self.recorder:
            return
        if self.recorder is not None:
            self.recorder.trees.listener = self.recorder.entries.listener = None
        ignore = [os.fsencode(p) for p in recorder.ignore_paths]
        arr = (ctypes.c_char_p * max(1, len(ignore)))(*ignore)
        cap = recorder.max_file_size
        self.lib.fl_reset(self.state, os.fsencode(recorder.home), arr, len(ignore),
                          -1 if cap is None else cap)
        add, state = self.lib.fl_add, self.state
        for p in recorder.trees:
            add(state, 0, os.fsencode(p))
        for p in recorder.entries:
            add(state, 1, os.fsencode(p))
        recorder.trees.listener = lambda p: add(state, 0, os.fsencode(p))
        recorder.entries.listener = lambda p: add(state, 1, os.fsencode(p))
        self.recorder = recorder

    def sync_trash(self) -> None:
        """Hand the recorder's trash (once it is open) and next entry number over."""
        assert self.recorder is not None
        trash = self.recorder.trash_state()
        if trash is not None:
            folder, journal, dev, n = trash
            self.lib.fl_set_trash(self.state, os.fsencode(folder), journal, dev, n)

    def serve(self, fds: Any, nfds: int, wait_ms: int, result: compiled.Result) -> int:
        """Answer syscalls in C until one needs Python or something else happens."""
        return int(self.lib.fl_serve(self.state, fds, nfds, wait_ms, ctypes.byref(result)))

    def take_links(self) -> int:
        """Give the recorder the files linked in C; the syscalls answered in C since the
        last call."""
        ptr = self.lib.fl_take_links(self.state, ctypes.byref(self._length))
        if self._length.value and self.recorder is not None:
            raw = ctypes.string_at(ptr, self._length.value)
            self.recorder.adopt_links([os.fsdecode(p) for p in raw.split(b"\0")[:-1]])
        total = int(self.lib.fl_answered(self.state))
        fresh, self._answered = total - self._answered, total
        return fresh

    def handed_over(self, result: compiled.Result) -> Notification:
        """The syscall fl_serve left for Python."""
        return parse(bytes(result.notif))

    def close(self) -> None:
        if self.recorder is not None:
            self.recorder.trees.listener = self.recorder.entries.listener = None
        if self.state:
            self.lib.fl_free(self.state)
            self.state = None
