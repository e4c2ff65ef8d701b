"""Opening psycopg connections and turning their failures into preimage errors."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from preimage.interface.errors import (
    InvalidTargetError,
    TerminalConnectorError,
    TransientConnectorError,
)
from preimage.interface.target import Target

if TYPE_CHECKING:
    import psycopg

CONNECT_TIMEOUT = 10
# The maintenance database used to create or drop a target database.
MAINTENANCE_DB = "postgres"


class DatabaseMissingError(TerminalConnectorError):
    """The target database does not exist (a capture records it as absent)."""


def _params(target: Target, database: str) -> dict[str, Any]:
    params: dict[str, Any] = {
        "host": target.host or "127.0.0.1",
        "dbname": database,
        "connect_timeout": CONNECT_TIMEOUT,
        "application_name": "preimage",
    }
    if target.port is not None:
        params["port"] = target.port
    if target.username:
        params["user"] = target.username
    password = target.resolve_password()
    if password is not None:
        params["password"] = password
    for name in ("sslmode", "sslrootcert", "sslcert", "sslkey"):
        if target.param(name):
            params[name] = target.param(name)
    return params


def connect(target: Target, database: str, *, autocommit: bool = False) -> psycopg.Connection[Any]:
    """Open a connection to ``database`` on the target's server.

    Raises :class:`DatabaseMissingError` when the database does not exist,
    :class:`TerminalConnectorError` for refused credentials, and
    :class:`TransientConnectorError` when the server cannot be reached.
    """
    import psycopg

    params = _params(target, database)
    where = f"{params['host']}:{params.get('port', 5432)}"
    try:
        return psycopg.connect(autocommit=autocommit, **params)
    except psycopg.OperationalError as exc:
        msg = str(exc).strip()
        low = msg.lower()
        if "password authentication failed" in low or "no password supplied" in low:
            raise TerminalConnectorError(
                f"PostgreSQL at {where} refused the credentials of user "
                f"{params.get('user', '(default)')!r}: {_last_line(msg)} — check the password "
                "(PREIMAGE_POSTGRESQL_PASSWORD or PGPASSWORD, or ~/.netrc)",
                target=target.redacted,
            ) from exc
        if f'database "{database}" does not exist' in msg:
            raise DatabaseMissingError(
                f"database {database!r} does not exist on {where}", target=target.redacted
            ) from exc
        if "pg_hba.conf" in low or ("role" in low and "does not exist" in low):
            raise TerminalConnectorError(
                f"PostgreSQL at {where} refused the connection: {_last_line(msg)}",
                target=target.redacted,
            ) from exc
        raise TransientConnectorError(
            f"cannot reach PostgreSQL at {where}: {_last_line(msg)} — is the server running "
            "and listening there?",
            target=target.redacted,
        ) from exc
    except psycopg.ProgrammingError as exc:
        raise InvalidTargetError(target.redacted, str(exc)) from exc


def _last_line(msg: str) -> str:
    for line in msg.splitlines():
        if "FATAL:" in line:
            return line.split("FATAL:", 1)[1].strip()
    return msg.splitlines()[0] if msg else msg
