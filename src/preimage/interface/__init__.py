"""The connector interface: what a connector, a snapshot schema or a third-party plug-in may
import.  The connector protocol and its base class, capabilities, the registry, target URIs
and their grammar helpers, the blob store a connector writes into, errors, redaction.

Nothing here imports the engine, the store or the backup layer (an import-linter contract
in ``pyproject.toml`` holds it)."""
