"""What a server's own dump tool said about a target's schema at capture time.

The capture reads objects through its own queries; an *outside oracle* reads the same
schema with a tool nobody here wrote (``pg_dump --schema-only``, ``mariadb-dump
--no-data``).  Its output, normalized (see
:mod:`preimage.connectors.postgres.oracle`), is kept compressed in the blob store; the
snapshot holds the blob's digest, a fingerprint and the tool that ran.  ``score`` dumps
the live schema the same way, and every line one side has and the other lacks is
reported as ``uncaptured (oracle)``: a kind nobody modelled cannot hide behind 1.0.

When the tool is not on the machine (or could not run), ``ran`` is false and ``reason``
says why, so the score can say the oracle did not run.
"""

from __future__ import annotations

from pydantic import BaseModel, ConfigDict


class SchemaOracle(BaseModel):
    """The outside dump tool's normalized view of the target's schema."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    tool: str                  # "pg_dump 15.10", as the tool names its version
    ran: bool = False
    reason: str = ""           # why it did not run (empty when it ran)
    digest: str | None = None  # blob (and sha256) of the normalized text
    lines: int = 0

    def describe(self) -> str:
        """One line: what ran, or why nothing did."""
        if self.ran:
            return f"{self.tool}: {self.lines} schema line(s)"
        return f"schema oracle did not run: {self.reason}"
