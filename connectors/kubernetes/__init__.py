"""The ``k8s`` connector: Kubernetes objects by namespace, type, name or label selector.

Names are imported on first use, so that reading this connector's URI grammar
does not import the connector.
"""

from typing import TYPE_CHECKING

from preimage.interface.lazy import lazy_exports

if TYPE_CHECKING:
    from preimage.connectors.kubernetes.connector import KubernetesConnector

__all__ = ["KubernetesConnector"]
__getattr__ = lazy_exports(__name__, {"KubernetesConnector": "connector"})
