"""Unit tests (no cluster): field classes, split/join, target URIs, restore order, derived objects."""

from __future__ import annotations

import copy
import json
from typing import Any

import pytest

from preimage import InvalidTargetError, Target
from preimage.connectors.kubernetes.address import Address
from preimage.connectors.kubernetes.derived import derived_reason
from preimage.connectors.kubernetes.discovery import ResourceType
from preimage.connectors.kubernetes.order import tier_of
from preimage.similarity import score
from preimage.snapshot_schemas import load_snapshot
from preimage.snapshot_schemas.kubernetes import (
    KubeObject,
    KubernetesSnapshot,
    leaf_class,
    split_object,
)

OWNER_UID = "11111111-1111-1111-1111-111111111111"


def replica_set(owner_uid: str = OWNER_UID, uid: str = "rs-uid") -> dict[str, Any]:
    """A ReplicaSet as the API returns it, owned by Deployment web."""
    return {
        "apiVersion": "apps/v1",
        "kind": "ReplicaSet",
        "metadata": {
            "name": "web-5d8f", "namespace": "shop", "uid": uid, "resourceVersion": "812",
            "generation": 3, "creationTimestamp": "2024-05-01T10:00:00Z",
            "labels": {"app": "web", "pod-template-hash": "5d8f"},
            "annotations": {"deployment.kubernetes.io/revision": "2"},
            "ownerReferences": [{"apiVersion": "apps/v1", "kind": "Deployment", "name": "web",
                                 "uid": owner_uid, "controller": True,
                                 "blockOwnerDeletion": True}],
            "managedFields": [{
                "manager": "kube-controller-manager", "operation": "Update",
                "apiVersion": "apps/v1", "time": "2024-05-01T10:00:00Z", "fieldsType": "FieldsV1",
                "fieldsV1": {"f:metadata": {"f:ownerReferences": {
                    ".": {}, f'k:{{"uid":"{owner_uid}"}}': {}}}},
            }],
        },
        "spec": {"replicas": 2, "selector": {"matchLabels": {"app": "web"}},
                 "template": {"metadata": {"labels": {"app": "web"}},
                              "spec": {"containers": [{"name": "web", "image": "web:2"}]}}},
        "status": {"replicas": 2, "observedGeneration": 3,
                   "conditions": [{"type": "ReplicaFailure", "status": "False",
                                   "lastTransitionTime": "2024-05-01T10:00:01Z"}]},
    }


def test_split_then_join_gives_back_the_object() -> None:
    """An object split into its three projections joins back to exactly itself."""
    obj = replica_set()
    item = KubeObject.from_object(copy.deepcopy(obj), "replicasets")
    assert item.manifest() == obj
    again = KubeObject.model_validate(json.loads(item.model_dump_json()))
    assert again.manifest() == obj


@pytest.mark.parametrize(
    ("kind", "path", "expected"),
    [
        ("ConfigMap", ("data", "k"), "content"),
        ("Deployment", ("spec", "replicas"), "content"),
        ("ConfigMap", ("metadata", "labels", "app"), "metadata"),
        ("ConfigMap", ("metadata", "finalizers", 0), "metadata"),
        ("ConfigMap", ("metadata", "uid"), "server"),
        ("ConfigMap", ("metadata", "resourceVersion"), "server"),
        ("ConfigMap", ("metadata", "generation"), "server"),
        ("ConfigMap", ("metadata", "creationTimestamp"), "server"),
        ("ReplicaSet", ("metadata", "ownerReferences", 0, "uid"), "server"),
        ("ReplicaSet", ("metadata", "ownerReferences", 0, "name"), "metadata"),
        ("ReplicaSet", ("metadata", "managedFields", 0, "time"), "server"),
        ("ReplicaSet", ("status", "replicas"), "metadata"),
        ("ReplicaSet", ("status", "observedGeneration"), "server"),
        ("ReplicaSet", ("status", "conditions", 0, "lastTransitionTime"), "server"),
        ("Pod", ("status", "phase"), "server"),
        ("Service", ("spec", "clusterIP"), "metadata"),
        ("Service", ("spec", "ports", 0, "nodePort"), "metadata"),
        ("Service", ("spec", "ports", 0, "port"), "content"),
        ("PersistentVolume", ("spec", "claimRef", "uid"), "server"),
        ("PersistentVolume", ("spec", "claimRef", "name"), "content"),
        ("Job", ("spec", "selector", "matchLabels", "controller-uid"), "server"),
        ("Secret", ("metadata", "annotations", "kubernetes.io/service-account.uid"), "server"),
    ],
)
def test_leaf_classes(kind: str, path: tuple[str | int, ...], expected: str) -> None:
    """Each leaf is in the fidelity class the schema declares for it."""
    assert leaf_class(kind, path) == expected


def test_new_owner_uid_changes_no_content_or_metadata_leaf() -> None:
    """An object re-owned by a re-created owner differs only in server-class leaves."""
    old = KubeObject.from_object(replica_set(), "replicasets")
    new = KubeObject.from_object(replica_set(owner_uid="2222", uid="other"), "replicasets")
    assert old.body == new.body and old.meta == new.meta
    assert old.assigned != new.assigned
    fields = new.manifest()["metadata"]["managedFields"][0]["fieldsV1"]
    assert 'k:{"uid":"2222"}' in fields["f:metadata"]["f:ownerReferences"]


def test_similarity_is_perfect_for_a_recreated_object() -> None:
    """Content and metadata score 1.0 when only server-assigned leaves moved; server less."""
    snap = lambda obj: KubernetesSnapshot(  # noqa: E731
        target="k8s://c/shop", context="c", namespace="shop",
        items=[KubeObject.from_object(obj, "replicasets")])
    report = score(snap(replica_set()), snap(replica_set(owner_uid="2", uid="3")))
    assert report.classes["content"].score == 1.0
    assert report.classes["metadata"].score == 1.0
    assert report.classes["server"].score < 1.0


def test_snapshot_round_trips_and_keeps_null_leaves() -> None:
    """A snapshot survives JSON; explicit nulls inside objects are kept."""
    obj = {"apiVersion": "example.com/v1", "kind": "Thing",
           "metadata": {"name": "t", "namespace": "n", "uid": "u"},
           "spec": {"empty": None, "list": [], "map": {}}}
    snap = KubernetesSnapshot(target="k8s://c/n", context="c", namespace="n",
                              items=[KubeObject.from_object(copy.deepcopy(obj), "things")])
    again = load_snapshot(json.loads(snap.model_dump_json()), KubernetesSnapshot)
    assert again == snap
    assert again.items[0].manifest() == obj


def test_split_keeps_positions_of_mixed_lists() -> None:
    """A list whose elements mix classes keeps its length in every projection."""
    _, meta, assigned = split_object(replica_set())
    assert len(meta["status"]["conditions"]) == len(assigned["status"]["conditions"]) == 1
    assert "lastTransitionTime" not in meta["status"]["conditions"][0]


@pytest.mark.parametrize(
    ("uri", "namespace", "resource", "name", "selector"),
    [
        ("k8s://ctx/shop", "shop", None, None, None),
        ("k8s://ctx/shop/deployments/web", "shop", "deployments", "web", None),
        ("k8s://ctx/_/persistentvolumes", None, "persistentvolumes", None, None),
        ("k8s://ctx/shop?selector=app.kubernetes.io/instance=web", "shop", None, None,
         "app.kubernetes.io/instance=web"),
        ("k8s:///shop/cm", "shop", "cm", None, None),
    ],
)
def test_target_uris(uri: str, namespace: str | None, resource: str | None,
                     name: str | None, selector: str | None) -> None:
    """k8s:// URIs name a namespace (or `_`), a resource, a name and a selector."""
    a = Address.parse(Target.parse(uri))
    assert (a.namespace, a.resource, a.name, a.selector) == (namespace, resource, name, selector)


@pytest.mark.parametrize(
    "uri",
    ["k8s://ctx", "k8s://ctx/Shop", "k8s://ctx/a/b/c/d", "k8s://ctx/shop?color=red",
     "k8s://user@ctx/shop", "k8s://ctx:6443/shop"],
)
def test_malformed_target_uris(uri: str) -> None:
    """Malformed k8s:// URIs are usage errors that say what to write."""
    with pytest.raises(InvalidTargetError):
        Address.parse(Target.parse(uri))


def test_restore_order_follows_velero_priorities() -> None:
    """CRDs, namespaces, classes, PVs, PVCs, RBAC, SAs, Secrets, ConfigMaps, …, workloads,
    Services, admission policies — in that order."""
    names = ["customresourcedefinitions.apiextensions.k8s.io", "namespaces",
             "storageclasses.storage.k8s.io", "persistentvolumes", "persistentvolumeclaims",
             "roles.rbac.authorization.k8s.io", "serviceaccounts", "secrets", "configmaps",
             "replicasets.apps", "widgets.example.com", "deployments.apps", "services",
             "validatingadmissionpolicies.admissionregistration.k8s.io"]
    tiers = [tier_of(n) for n in names]
    assert tiers == sorted(tiers) and len(set(tiers)) == len(tiers)


def _rtype(kind: str, qualified: str = "") -> ResourceType:
    group = qualified.partition(".")[2]
    return ResourceType(group=group, version="v1", resource=qualified.partition(".")[0] or
                        kind.lower() + "s", kind=kind, namespaced=True, verbs=frozenset())


def test_what_the_cluster_derives_is_skipped() -> None:
    """Controller-owned pods, managed Endpoints and CronJob runs are derived; RS are not."""
    pod = {"metadata": {"name": "p", "ownerReferences": [
        {"kind": "ReplicaSet", "name": "web-1", "controller": True}]}}
    assert derived_reason(pod, _rtype("Pod"), include_owned=False)
    assert derived_reason(pod, _rtype("Pod"), include_owned=True) is None
    rs = replica_set()
    assert derived_reason(rs, _rtype("ReplicaSet", "replicasets.apps"), include_owned=False) is None
    ep = {"metadata": {"name": "web",
                       "labels": {"endpoints.kubernetes.io/managed-by": "endpoint-controller"}}}
    assert derived_reason(ep, _rtype("Endpoints", "endpoints"), include_owned=False)
    job = {"metadata": {"name": "j", "ownerReferences": [
        {"kind": "CronJob", "name": "nightly", "controller": True}]}}
    assert derived_reason(job, _rtype("Job", "jobs.batch"), include_owned=False)
    cm = {"metadata": {"name": "settings"}}
    assert derived_reason(cm, _rtype("ConfigMap", "configmaps"), include_owned=False) is None


def _snapshot(*objs: dict[str, Any]) -> KubernetesSnapshot:
    return KubernetesSnapshot(
        target="k8s://ctx/shop", context="ctx",
        items=[KubeObject.from_object(copy.deepcopy(o), "replicasets") for o in objs],
    )


def test_managed_fields_in_another_order_are_the_same_object() -> None:
    """The API server orders managedFields by time; the meter matches entries by
    manager, operation and subresource, so a reordered list scores 1.0 and diffs empty."""
    from preimage.similarity import diff_snapshots

    obj = replica_set()
    second = {"manager": "kubectl", "operation": "Apply", "apiVersion": "apps/v1",
              "time": "2024-05-01T11:00:00Z", "fieldsType": "FieldsV1",
              "fieldsV1": {"f:spec": {"f:replicas": {}}}}
    obj["metadata"]["managedFields"].append(second)
    swapped = copy.deepcopy(obj)
    swapped["metadata"]["managedFields"].reverse()
    rep = score(_snapshot(obj), _snapshot(swapped))
    assert rep.overall.score == 1.0, rep.differences
    assert diff_snapshots(_snapshot(obj), _snapshot(swapped)).empty
    # an entry really lost is one named difference per field, by its key
    lost = copy.deepcopy(obj)
    lost["metadata"]["managedFields"].pop()
    paths = {d.path for d in score(_snapshot(obj), _snapshot(lost)).differences}
    assert 'metadata.managedFields[manager="kubectl", operation="Apply"].apiVersion' in paths
    assert not any("[0]" in p or "[1]" in p for p in paths)


def test_object_differences_read_as_object_paths_with_the_server_reason() -> None:
    """A re-created object's uid differs with the API server's reason, under a plain path."""
    rep = score(_snapshot(replica_set()), _snapshot(replica_set(uid="new-uid")))
    [d] = rep.differences
    assert (d.item, d.path, d.fidelity) == ("replicasets.apps/shop/web-5d8f", "metadata.uid", "server")
    assert d.note == "the API server gives every object it creates a new uid"
    assert rep.restorable.score == 1.0
