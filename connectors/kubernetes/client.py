"""A thin JSON client for the Kubernetes API, configured from a kubeconfig context.

The official ``kubernetes`` package loads the kubeconfig (tokens, client
certificates, exec plugins, CA bundles) and owns the connection pool; the
requests themselves go out as raw JSON so that objects are kept exactly as the
server returns them (the generated models would drop fields they do not know).
"""

from __future__ import annotations

import json
import os
from dataclasses import dataclass
from typing import Any
from urllib.parse import unquote

from preimage.interface.errors import (
    InvalidTargetError,
    TerminalConnectorError,
    TransientConnectorError,
)

JSON = "application/json"
MERGE_PATCH = "application/merge-patch+json"
FIELD_MANAGER = "preimage"
_TIMEOUT = (10.0, 120.0)  # connect, read (seconds)


@dataclass
class ApiError(Exception):
    """A non-2xx answer of the API server (other than 401, which is terminal)."""

    status: int
    reason: str
    message: str
    method: str = ""
    path: str = ""

    def __str__(self) -> str:
        return f"{self.status} {self.reason}: {self.message}"

    @property
    def not_found(self) -> bool:
        return self.status == 404

    @property
    def forbidden(self) -> bool:
        return self.status == 403

    @property
    def conflict(self) -> bool:
        """409: the object already exists, or its resourceVersion moved on."""
        return self.status == 409


def kubeconfig_path(explicit: str | None = None) -> str:
    """Where the kubeconfig is read from: the target's ``kubeconfig=``, else ``$KUBECONFIG``
    (may list several files), else ``~/.kube/config``."""
    return explicit or os.environ.get("KUBECONFIG") or os.path.expanduser("~/.kube/config")


def resolve_context(requested: str | None, uri: str,
                    kubeconfig: str | None = None) -> tuple[str, list[str]]:
    """The kubeconfig context a target names (``None``: the current context).

    URI hosts are lower-cased and cannot hold ``:`` or ``@`` unescaped, so a
    context is matched exactly, then after percent-decoding, then ignoring
    case.  Raises :class:`InvalidTargetError` naming the known contexts.
    """
    from kubernetes.config.config_exception import ConfigException
    from kubernetes.config.kube_config import list_kube_config_contexts

    path = kubeconfig_path(kubeconfig)
    try:
        contexts, current = list_kube_config_contexts(config_file=path)  # type: ignore[no-untyped-call]
    except (ConfigException, OSError) as exc:
        raise InvalidTargetError(
            uri, f"cannot read the kubeconfig at {path}: {exc} — set KUBECONFIG"
        ) from exc
    except Exception as exc:  # the loader raises bare errors on malformed files
        raise InvalidTargetError(uri, f"cannot read the kubeconfig at {path}: {exc}") from exc
    names = [str(c["name"]) for c in contexts or []]
    if not requested:
        if not current:
            raise InvalidTargetError(
                uri, f"the kubeconfig at {path} has no current context; name one in the URI"
            )
        return str(current["name"]), names
    for candidate in (requested, unquote(requested)):
        if candidate in names:
            return candidate, names
    folded = [n for n in names if n.lower() == unquote(requested).lower()]
    if len(folded) == 1:
        return folded[0], names
    known = ", ".join(sorted(names)) or "none"
    raise InvalidTargetError(
        uri, f"no context {unquote(requested)!r} in the kubeconfig at {path} (contexts: {known})"
    )


class KubeClient:
    """Requests against the API server of one kubeconfig context."""

    def __init__(self, context: str | None, uri: str, kubeconfig: str | None = None) -> None:
        from kubernetes.config.config_exception import ConfigException
        from kubernetes.config.kube_config import new_client_from_config

        self.uri = uri
        self.context, _ = resolve_context(context, uri, kubeconfig)
        try:
            self._api = new_client_from_config(  # type: ignore[no-untyped-call]
                config_file=kubeconfig_path(kubeconfig), context=self.context,
                persist_config=False
            )
        except ConfigException as exc:
            raise TerminalConnectorError(
                f"cannot use context {self.context!r} of the kubeconfig: {exc}", target=uri
            ) from exc
        self.server = str(self._api.configuration.host)

    def close(self) -> None:
        """Release the connection pool."""
        self._api.close()

    def __enter__(self) -> KubeClient:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def request(
        self,
        method: str,
        path: str,
        *,
        query: list[tuple[str, str]] | None = None,
        body: Any = None,
        content_type: str = JSON,
        accept: str = JSON,
    ) -> Any:
        """Send one request; return the decoded JSON answer.

        Raises :class:`ApiError` for an error answer, :class:`TerminalConnectorError`
        when the credentials are rejected (401) and :class:`TransientConnectorError`
        when the server cannot be reached.
        """
        import urllib3
        from kubernetes.client.exceptions import ApiException

        headers = {"Accept": accept}
        if body is not None:
            headers["Content-Type"] = content_type
        try:
            method_, url, headers_, body_, _ = self._api.param_serialize(
                method, path, query_params=query or [], header_params=headers, body=body,
                auth_settings=["BearerToken"],
            )
            resp = self._api.call_api(method_, url, header_params=headers_, body=body_,
                                      _request_timeout=_TIMEOUT)
            raw = resp.read()
        except (urllib3.exceptions.HTTPError, ApiException, OSError) as exc:
            raise TransientConnectorError(
                f"cannot reach the Kubernetes API server at {self.server} (context "
                f"{self.context!r}): {_short(exc)} — is the cluster running and reachable?",
                target=self.uri,
            ) from exc
        if resp.status == 401:
            raise TerminalConnectorError(
                f"the API server at {self.server} rejected the credentials of context "
                f"{self.context!r} (401 Unauthorized): the token or client certificate is "
                "invalid or expired — log in again or refresh the kubeconfig",
                target=self.uri,
            )
        try:
            doc = json.loads(raw) if raw else {}
        except ValueError:
            doc = {"message": raw[:300].decode("utf-8", "replace")}
        if resp.status >= 300:
            raise ApiError(
                int(resp.status),
                str(doc.get("reason") or resp.reason or ""),
                str(doc.get("message") or ""),
                method,
                path,
            )
        return doc


def _short(exc: BaseException) -> str:
    text = str(exc).strip().splitlines()
    reason = getattr(exc, "reason", None)
    if reason is not None and str(reason):
        return str(reason)[:300]
    return (text[-1] if text else type(exc).__name__)[:300]
