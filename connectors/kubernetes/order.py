"""The order a restore writes objects in, after Velero's documented priorities.

Each tier is restored (its objects in parallel) before the next starts:

1. CustomResourceDefinitions — then wait until each is Established, so that
   custom resources can be created;
2. Namespaces;
3. classes other objects refer to: StorageClasses, VolumeAttributesClasses,
   PriorityClasses, IngressClasses, RuntimeClasses;
4. PersistentVolumes — pre-bound to their claim by name only, so a volume
   whose claim is still missing is never reclaimed (deleted) meanwhile;
5. PersistentVolumeClaims — right after this tier each restored volume's
   ``claimRef.uid`` is set to its claim's new UID, which completes the binding;
6. RBAC: ClusterRoles, ClusterRoleBindings, Roles, RoleBindings;
7. ServiceAccounts, then Secrets (a service-account token secret needs its
   account's new UID), then ConfigMaps, LimitRanges, ResourceQuotas;
8. bare Pods, then ReplicaSets and ControllerRevisions — *before* the
   Deployments/StatefulSets that own them, which adopt them instead of
   creating new ones (the rollout history survives);
9. everything else: custom resources, NetworkPolicies, Ingresses, PDBs, HPAs…;
10. workloads: Deployments, StatefulSets, DaemonSets, ReplicationControllers,
    Jobs, CronJobs;
11. Endpoints/EndpointSlices written by hand, then Services;
12. admission configuration last (ValidatingAdmissionPolicies and their
    bindings, webhook configurations), so a restored policy cannot reject
    the objects restored with it.

ownerReferences to owners restored later are added once every tier is done.
"""

from __future__ import annotations

OTHER = "*"

TIERS: tuple[tuple[str, ...], ...] = (
    ("customresourcedefinitions.apiextensions.k8s.io",),
    ("namespaces",),
    ("storageclasses.storage.k8s.io", "volumeattributesclasses.storage.k8s.io",
     "priorityclasses.scheduling.k8s.io", "ingressclasses.networking.k8s.io",
     "runtimeclasses.node.k8s.io"),
    ("persistentvolumes",),
    ("persistentvolumeclaims",),
    ("clusterroles.rbac.authorization.k8s.io", "clusterrolebindings.rbac.authorization.k8s.io",
     "roles.rbac.authorization.k8s.io", "rolebindings.rbac.authorization.k8s.io"),
    ("serviceaccounts",),
    ("secrets",),
    ("configmaps", "limitranges", "resourcequotas"),
    ("pods",),
    ("replicasets.apps", "controllerrevisions.apps"),
    (OTHER,),
    ("deployments.apps", "statefulsets.apps", "daemonsets.apps", "replicationcontrollers",
     "jobs.batch", "cronjobs.batch"),
    ("endpoints", "endpointslices.discovery.k8s.io"),
    ("services",),
    ("validatingadmissionpolicies.admissionregistration.k8s.io",
     "mutatingadmissionpolicies.admissionregistration.k8s.io",
     "validatingadmissionpolicybindings.admissionregistration.k8s.io",
     "mutatingadmissionpolicybindings.admissionregistration.k8s.io",
     "validatingwebhookconfigurations.admissionregistration.k8s.io",
     "mutatingwebhookconfigurations.admissionregistration.k8s.io"),
)

_RANK = {name: i for i, tier in enumerate(TIERS) for name in tier}


def tier_of(qualified: str) -> int:
    """The tier a ``resource.group`` is restored in."""
    return _RANK.get(qualified, _RANK[OTHER])
