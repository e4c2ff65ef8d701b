"""The ``k8s`` connector: Kubernetes objects by namespace, type, name or label selector."""

from preimage.connectors.kubernetes.connector import KubernetesConnector

__all__ = ["KubernetesConnector"]
