"""A server's own dump tool running beside a capture (the schema oracle): its output goes
to a temporary file while the connector reads, and :meth:`DumpRun.finish` stores it in the
blob store as normalized lines — or a :class:`SchemaOracle` says why it did not run."""

from __future__ import annotations

import subprocess
import tempfile
from collections.abc import Callable, Mapping, Sequence
from typing import IO

from preimage.interface.blobs import BlobStore
from preimage.snapshot_schemas.oracle import SchemaOracle


class DumpRun:
    """A dump tool running beside the capture."""

    def __init__(self, tool: str, proc: subprocess.Popen[bytes], out: IO[bytes],
                 err: IO[bytes], normalize: Callable[[str], list[str]], timeout: int) -> None:
        self.tool = tool
        self._proc = proc
        self._out = out
        self._err = err
        self._normalize = normalize
        self._timeout = timeout

    def finish(self, blobs: BlobStore) -> SchemaOracle:
        """Wait for the dump (a capture that shares its snapshot must still hold it open)
        and store its normalized output."""
        try:
            try:
                code = self._proc.wait(timeout=self._timeout)
            except subprocess.TimeoutExpired:
                return SchemaOracle(tool=self.tool, reason=f"{self.tool} took over "
                                    f"{self._timeout} s and was stopped")
            if code != 0:
                self._err.seek(0)
                lines = self._err.read().decode(errors="replace").strip().splitlines()
                why = lines[-1] if lines else f"exited with status {code}"
                return SchemaOracle(tool=self.tool, reason=f"{self.tool} failed: {why}")
            self._out.seek(0)
            normalized = self._normalize(self._out.read().decode("utf-8", errors="replace"))
            text = "".join(line + "\n" for line in normalized)
            return SchemaOracle(tool=self.tool, ran=True, digest=blobs.put_bytes(text.encode()),
                                lines=len(normalized))
        finally:
            self.close()

    def close(self) -> None:
        """Stop the dump if it still runs, and drop its files."""
        if self._proc.poll() is None:
            self._proc.kill()
        self._proc.wait()
        self._out.close()
        self._err.close()


def spawn(tool: str, args: Sequence[str], env: Mapping[str, str],
          normalize: Callable[[str], list[str]], timeout: int) -> DumpRun | SchemaOracle:
    """Start ``args`` (the dump tool, ``args[0]``) with ``env``: a :class:`DumpRun`, or a
    :class:`SchemaOracle` saying why it could not start.  A password travels in ``env``,
    never in the arguments (other users can read those)."""
    # both files live as long as the DumpRun, which closes them
    out = tempfile.TemporaryFile()  # noqa: SIM115
    err = tempfile.TemporaryFile()  # noqa: SIM115
    try:
        proc = subprocess.Popen(list(args), env=dict(env), stdin=subprocess.DEVNULL,
                                stdout=out, stderr=err)
    except OSError as exc:
        out.close()
        err.close()
        return SchemaOracle(tool=tool, reason=f"cannot run {args[0]}: {exc.strerror}")
    return DumpRun(tool, proc, out, err, normalize, timeout)
