"""``k8s://`` target URIs: read by :meth:`Address.parse`, built by :func:`k8s_uri`.

::

    k8s://CONTEXT/NAMESPACE[/RESOURCE[/NAME]][?selector=LABELS][&owned=true]
    k8s://CONTEXT/_[/RESOURCE[/NAME]]          cluster-scoped objects
    k8s://CONTEXT/_all/RESOURCE[?selector=…]   one namespaced resource in every namespace
    k8s://CONTEXT/_all/pods?node=NODE          the pods bound to one node (what a drain evicts)

* ``CONTEXT`` — a kubeconfig context (from ``$KUBECONFIG``); empty
  (``k8s:///shop``) means the current context.  Percent-encode ``:`` and
  ``@`` in context names; case does not matter.
* ``NAMESPACE`` — everything in it, the Namespace object included; ``_``
  (not a valid namespace name) stands for the cluster scope.
* ``RESOURCE`` — plural, singular, kind or short name, optionally with its
  group (``deployments``, ``deploy``, ``widgets.example.com``).
* ``selector`` — a label selector, as ``kubectl -l`` takes it.
* ``owned=true`` — also capture what controllers create and own (pods of a
  ReplicaSet, jobs of a CronJob…), which are skipped by default.
* ``node`` — only pods bound to that node (the API server's field selector
  ``spec.nodeName``); the resource must be ``pods``, and no name is given.
* ``kubeconfig=PATH`` — the kubeconfig file to read the context from, instead of
  ``$KUBECONFIG`` (a tool that runs with a kubeconfig of its own — an MCP server
  whose definition sets ``KUBECONFIG`` — is backed up and restored with that one).
"""

from __future__ import annotations

from dataclasses import dataclass
from urllib.parse import quote

from preimage.interface.errors import InvalidTargetError
from preimage.interface.target import Target
from preimage.interface.uri import query

CLUSTER = "_"
ALL_NAMESPACES = "_all"
_CLUSTER_ALIASES = (CLUSTER, "_cluster")
_TRUE = ("1", "true", "yes", "on")
_FALSE = ("", "0", "false", "no", "off")


@dataclass(frozen=True)
class Address:
    """A parsed ``k8s://`` target."""

    uri: str
    context: str | None
    namespace: str | None  # None: cluster scope
    resource: str | None
    name: str | None
    selector: str | None
    include_owned: bool
    all_namespaces: bool = False
    kubeconfig: str | None = None
    node: str | None = None

    @property
    def whole_namespace(self) -> bool:
        """The target is a namespace with nothing narrowing it."""
        return self.namespace is not None and not self.resource and not self.selector

    @classmethod
    def parse(cls, target: Target) -> Address:
        """Read a target; raise :class:`InvalidTargetError` when it is malformed."""
        uri = target.redacted
        if target.username or target.port is not None:
            raise InvalidTargetError(
                uri, "k8s:// targets name a kubeconfig context, not user@host:port "
                "(percent-encode '@' and ':' in context names)"
            )
        parts = [p for p in target.path.split("/") if p]
        if not parts:
            raise InvalidTargetError(
                uri, "name a namespace (k8s://CONTEXT/NAMESPACE) or the cluster scope "
                "(k8s://CONTEXT/_/RESOURCE)"
            )
        if len(parts) > 3:
            raise InvalidTargetError(uri, "expected k8s://CONTEXT/NAMESPACE[/RESOURCE[/NAME]]")
        unknown = set(target.query) - {"selector", "owned", "kubeconfig", "node"}
        if unknown:
            raise InvalidTargetError(
                uri, f"unknown query parameter(s) {', '.join(sorted(unknown))} "
                "(known: selector, owned, kubeconfig, node)"
            )
        node = target.param("node") or None
        if node is not None:
            if len(parts) != 2 or parts[0] in _CLUSTER_ALIASES:
                raise InvalidTargetError(
                    uri, "node= selects pods: write k8s://CONTEXT/_all/pods?node=NODE (or "
                    "k8s://CONTEXT/NAMESPACE/pods?node=NODE)")
            if not _dns_subdomain(node):
                raise InvalidTargetError(uri, f"{node!r} is not a valid node name")
        all_namespaces = parts[0] == ALL_NAMESPACES
        if all_namespaces and (len(parts) != 2):
            raise InvalidTargetError(
                uri, "_all takes exactly one resource: k8s://CONTEXT/_all/RESOURCE[?selector=…]"
            )
        namespace = None if parts[0] in (*_CLUSTER_ALIASES, ALL_NAMESPACES) else parts[0]
        if namespace is not None and not _dns_label(namespace):
            raise InvalidTargetError(uri, f"{namespace!r} is not a valid namespace name")
        selector = target.param("selector") or None
        owned = (target.param("owned") or "").lower()
        if owned not in (*_TRUE, *_FALSE):
            raise InvalidTargetError(uri, f"owned={owned!r}: write owned=true or owned=false")
        return cls(
            uri=uri,
            context=target.host or None,
            namespace=namespace,
            resource=parts[1] if len(parts) > 1 else None,
            name=parts[2] if len(parts) > 2 else None,
            selector=selector,
            include_owned=owned in _TRUE,
            all_namespaces=all_namespaces,
            kubeconfig=target.param("kubeconfig") or None,
            node=node,
        )


def _dns_subdomain(name: str) -> bool:
    return 0 < len(name) <= 253 and all(_dns_label(p) for p in name.split("."))


def _dns_label(name: str) -> bool:
    return (
        0 < len(name) <= 63
        and name[0].isalnum()
        and name[-1].isalnum()
        and all((c.isalnum() and c.islower()) or c.isdigit() or c == "-" for c in name)
    )


def k8s_uri(
    context: str,
    namespace: str | None,
    resource: str | None = None,
    name: str | None = None,
    *,
    selector: str | None = None,
    kubeconfig: str | None = None,
    node: str | None = None,
) -> str:
    """``k8s://ctx/ns[/resource[/name]][?selector=…][&node=…]``; ``namespace=None`` means
    the cluster scope (``_``), :data:`ALL_NAMESPACES` every namespace."""
    ns = namespace if namespace is not None else CLUSTER
    path = "/" + quote(ns, safe="")
    if resource:
        path += "/" + quote(resource, safe=".")
        if name:
            path += "/" + quote(name, safe=".:")
    params = [("selector", selector or ""), ("node", node or ""),
              ("kubeconfig", kubeconfig or "")]
    return f"k8s://{quote(context, safe='-._~')}{path}{query(params)}"
