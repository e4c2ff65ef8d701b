"""Kubernetes: a real control plane, one namespace per scenario run.

The cluster is the test launcher ``fixtures/kubernetes/control_plane.py``
(etcd, kube-apiserver and kube-controller-manager built by ``build.sh``),
started once per benchmark run — or an existing cluster when
``PREIMAGE_BENCH_KUBECONFIG`` names a kubeconfig (context:
``PREIMAGE_BENCH_KUBE_CONTEXT``, else the current one).

``setup.kubernetes`` is ``{namespace, manifests}``: the namespace gets the
run's suffix (``shop`` → ``{ns}`` = ``shop-<run>``, so namespaces still
terminating from the previous run never collide), is created, and the
manifests (``{ns}``, ``{run}`` filled in) are applied with ``kubectl
apply``.  Cluster-scoped objects should carry the label ``bench-run: "{run}"``
so teardown finds them.  Variables: ``{ns}``, ``{k8s_context}``,
``{k8s_uri}`` (``k8s://<context>``); shell calls get ``KUBECONFIG`` and
``kubectl`` on ``PATH``.  MCP calls (``kubectl_delete`` / ``delete_resource``
with ``resourceType``, ``name``, ``namespace``, ``labelSelector``, ``all``)
run ``kubectl delete`` as the Kubernetes MCP servers do.
"""

from __future__ import annotations

import os
import shutil
import subprocess
from pathlib import Path
from typing import Any, ClassVar

from preimage.bench.systems.base import CallOutcome, Sandbox, System, fixtures_dir, load_fixture
from preimage.interface.errors import UsageError


class KubernetesSystem(System):
    """A control plane shared by the run; a fresh namespace per scenario run."""

    name: ClassVar[str] = "kubernetes"
    schemes: ClassVar[tuple[str, ...]] = ("file", "k8s")
    files_only: ClassVar[bool] = False

    def __init__(self) -> None:
        self.plane: Any = None
        self.kubeconfig = ""
        self.context = ""
        self.bin_dir: Path | None = None
        self._saved: str | None = None

    def start(self, workdir: Path) -> None:
        """Reuse ``$PREIMAGE_BENCH_KUBECONFIG`` or build and start the test control plane."""
        given = os.environ.get("PREIMAGE_BENCH_KUBECONFIG")
        if given:
            self.kubeconfig = given
            self.context = os.environ.get("PREIMAGE_BENCH_KUBE_CONTEXT", "")
            found = shutil.which("kubectl")
            self.bin_dir = Path(found).parent if found else None
            if not self.context:
                self.context = self.kubectl("config", "current-context").output.strip()
        else:
            launcher = load_fixture("kubernetes/control_plane.py")
            base = fixtures_dir()
            assert base is not None
            built = subprocess.run(
                ["bash", str(base / "kubernetes" / "build.sh")],
                capture_output=True, text=True, timeout=3600,
            )
            if built.returncode != 0:
                raise UsageError(f"fixtures/kubernetes/build.sh failed: {built.stderr[-600:]}")
            self.bin_dir = Path(built.stdout.strip().splitlines()[-1])
            self.plane = launcher.ControlPlane(self.bin_dir).start()
            self.kubeconfig = str(self.plane.kubeconfig_path)
            self.context = launcher.ADMIN_CONTEXT
        # The connector reads the cluster from KUBECONFIG, as a user's kubectl does.
        self._saved = os.environ.get("KUBECONFIG")
        os.environ["KUBECONFIG"] = self.kubeconfig

    def stop(self) -> None:
        """Stop the control plane the run started; put ``KUBECONFIG`` back."""
        if self._saved is None:
            os.environ.pop("KUBECONFIG", None)
        else:
            os.environ["KUBECONFIG"] = self._saved
        if self.plane is not None:
            self.plane.stop()
            self.plane = None

    def _kubectl_path(self) -> str:
        if self.bin_dir is not None and (self.bin_dir / "kubectl").exists():
            return str(self.bin_dir / "kubectl")
        return "kubectl"

    def kubectl(
        self, *args: str, stdin: str | None = None, timeout: float = 120, full: bool = False
    ) -> CallOutcome:
        """Run kubectl against the cluster's context (``full``: all of stdout, else the tail)."""
        cmd = [self._kubectl_path(), f"--kubeconfig={self.kubeconfig}"]
        if self.context:
            cmd.append(f"--context={self.context}")
        proc = subprocess.run(
            [*cmd, *args], input=stdin, capture_output=True, text=True, timeout=timeout,
        )
        if full:
            return CallOutcome(proc.returncode, proc.stdout)
        return CallOutcome(proc.returncode, (proc.stdout + proc.stderr)[-2000:])

    def prepare(self, setup: dict[str, Any], sandbox: Sandbox) -> None:
        """``{ns}``, ``{k8s_context}``, ``{k8s_uri}`` and the kubectl environment."""
        spec = setup.get("kubernetes") or {}
        ns = f"{spec.get('namespace', 'bench')}-{sandbox.variables['run']}"
        sandbox.variables.update(ns=ns, k8s_context=self.context, k8s_uri=f"k8s://{self.context}")
        sandbox.env["KUBECONFIG"] = self.kubeconfig
        if self.bin_dir is not None:
            sandbox.env["PATH"] = f"{self.bin_dir}:{sandbox.env['PATH']}"

    def seed_system(self, setup: dict[str, Any], sandbox: Sandbox) -> None:
        """Create the run's namespace and apply the scenario's manifests."""
        spec = setup.get("kubernetes") or {}
        run, ns = sandbox.variables["run"], sandbox.variables["ns"]
        made = self.kubectl("create", "namespace", ns)
        if made.exit_code != 0:
            raise UsageError(f"cannot create namespace {ns}: {made.output.strip()}")
        self.kubectl("label", "namespace", ns, f"bench-run={run}")
        manifests = spec.get("manifests")
        if manifests:
            applied = self.kubectl("apply", "-n", ns, "-f", "-", stdin=str(manifests))
            if applied.exit_code != 0:
                raise UsageError(f"setup.kubernetes.manifests: {applied.output.strip()[-800:]}")

    def settle(self, sandbox: Sandbox, timeout: float = 60.0) -> None:
        """Until the run namespace's Deployments have counted their pods and its claims
        whose volume exists are Bound again (controllers write ``status`` a moment after
        every change; scoring in between would measure the controllers, not the restore)."""
        import json
        import time

        ns = sandbox.variables.get("ns")
        if not ns:
            return
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            got = self.kubectl("get", "deployments,persistentvolumeclaims", "-n", ns, "-o", "json",
                               full=True)
            pvs = self.kubectl("get", "persistentvolumes", "-o", "name", full=True).output.split()
            try:
                items = json.loads(got.output)["items"] if got.exit_code == 0 else []
            except (ValueError, KeyError):
                items = []
            volumes = {p.rpartition("/")[2] for p in pvs}
            if all(_settled(obj, volumes) for obj in items):
                return
            time.sleep(0.3)

    def teardown(self, sandbox: Sandbox) -> None:
        """Delete the run's namespace and its labelled cluster-scoped objects."""
        ns, run = sandbox.variables.get("ns"), sandbox.variables.get("run")
        if not ns:
            return
        self.kubectl("delete", "persistentvolumes", "-l", f"bench-run={run}",
                     "--ignore-not-found", "--wait=false")
        self.kubectl("delete", "namespace", ns, "--ignore-not-found", "--timeout=90s")

    def run_mcp(
        self, server: str, tool: str, arguments: dict[str, Any], sandbox: Sandbox
    ) -> CallOutcome:
        """``kubectl delete`` for a Kubernetes MCP server's delete tool."""
        if tool not in ("kubectl_delete", "delete_resource", "resources_delete"):
            return super().run_mcp(server, tool, arguments, sandbox)
        args = ["delete", str(arguments.get("resourceType") or arguments.get("kind"))]
        if arguments.get("name"):
            args.append(str(arguments["name"]))
        if arguments.get("namespace"):
            args += ["-n", str(arguments["namespace"])]
        if arguments.get("labelSelector"):
            args += ["-l", str(arguments["labelSelector"])]
        if arguments.get("all"):
            args.append("--all")
        return self.kubectl(*args)

    def mcp_servers(self, sandbox: Sandbox) -> dict[str, dict[str, Any]]:
        """The Kubernetes MCP server stands behind the run's cluster context."""
        return {"kubernetes": {"kind": "kubernetes", "target": sandbox.variables["k8s_uri"]}}


# Kinds a content-only copy leaves out: events and what controllers or the API
# server make by themselves.
_SKIP_KINDS = frozenset({
    "events", "events.events.k8s.io", "pods", "endpoints", "endpointslices.discovery.k8s.io",
    "replicasets.apps", "controllerrevisions.apps", "leases.coordination.k8s.io",
    "localsubjectaccessreviews.authorization.k8s.io", "bindings",
    "csistoragecapacities.storage.k8s.io", "podmetrics.metrics.k8s.io",
})
# Spec fields that are hard metadata (identities the cluster assigned, bindings).
_STRIP_SPEC = {
    "Service": ("clusterIP", "clusterIPs"),
    "PersistentVolume": ("claimRef",),
    "PersistentVolumeClaim": ("volumeName",),
}


class K8sSpecCopier:
    """Content-only for Kubernetes: specs and data, without hard metadata.

    ``kubectl get -o json`` of the target's objects keeping ``apiVersion``,
    ``kind``, name, namespace and the body (``spec``, ``data``, …); labels,
    annotations, finalizers, owner references, ``status``, a Service's
    ``clusterIP`` and ``nodePort``, PV/PVC bindings are dropped.  Objects a
    controller owns are left to their controller.  Written back with
    ``kubectl apply`` (the namespace re-created first when it is gone).
    """

    @staticmethod
    def _kubectl(target: Any, env: dict[str, str], *args: str, stdin: str | None = None
                 ) -> subprocess.CompletedProcess[str]:
        ctx = [f"--context={target.host}"] if target.host else []
        return subprocess.run(["kubectl", *ctx, *args], input=stdin, capture_output=True,
                              text=True, env=env, timeout=180)

    def _kinds(self, target: Any, env: dict[str, str], namespaced: bool) -> list[str]:
        got = self._kubectl(target, env, "api-resources", f"--namespaced={str(namespaced).lower()}",
                            "--verbs=list,create", "-o", "name")
        return [k for k in got.stdout.split() if k not in _SKIP_KINDS]

    def take(self, target: Any, dest: Path, env: dict[str, str]) -> tuple[Any, int]:
        """The target's objects, reduced to their content."""
        import json

        parts = [p for p in target.path.split("/") if p]
        ns = None if parts[0] == "_" else parts[0]
        kinds = [parts[1]] if len(parts) > 1 else self._kinds(target, env, ns is not None)
        args = ["get", ",".join(kinds), "-o", "json"]
        args += ["-n", ns] if ns else []
        if len(parts) > 2:
            args = ["get", parts[1], parts[2], "-o", "json", *(["-n", ns] if ns else [])]
        if target.param("selector"):
            args += ["-l", str(target.param("selector"))]
        got = self._kubectl(target, env, *args)
        if got.returncode != 0:
            raise RuntimeError(got.stderr.strip()[-400:])
        doc = json.loads(got.stdout)
        items = doc.get("items", [doc]) if doc.get("kind", "").endswith("List") else [doc]
        kept = [_content_only(o) for o in items if _copied(o)]
        if ns and len(parts) == 1 and not target.param("selector"):
            kept.insert(0, {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": ns}})
        text = json.dumps({"apiVersion": "v1", "kind": "List", "items": kept})
        return (ns, text), len(text.encode())

    def put_back(self, target: Any, handle: Any, env: dict[str, str]) -> None:
        """``kubectl apply`` the copy (after re-creating a missing namespace)."""
        ns, text = handle
        if ns and self._kubectl(target, env, "get", "namespace", ns).returncode != 0:
            self._kubectl(target, env, "create", "namespace", ns)
        got = self._kubectl(target, env, "apply", "-f", "-", stdin=text)
        if got.returncode != 0:
            raise RuntimeError(got.stderr.strip()[-400:])


def _settled(obj: dict[str, Any], volumes: set[str]) -> bool:
    spec, status = obj.get("spec", {}), obj.get("status", {})
    if obj.get("kind") == "Deployment":
        want = spec.get("replicas", 1)
        return bool(
            status.get("observedGeneration") == obj["metadata"].get("generation")
            and status.get("replicas", 0) == want and status.get("updatedReplicas", 0) == want
        )
    if obj.get("kind") == "PersistentVolumeClaim" and spec.get("volumeName") in volumes:
        return bool(status.get("phase") == "Bound")  # its volume exists: wait for the binding
    return True


def _copied(obj: dict[str, Any]) -> bool:
    md = obj.get("metadata", {})
    if md.get("ownerReferences"):
        return False
    name, kind = md.get("name"), obj.get("kind")
    if (kind, name) in (("ConfigMap", "kube-root-ca.crt"), ("ServiceAccount", "default")):
        return False
    return not (kind == "Secret" and obj.get("type") == "kubernetes.io/service-account-token")


def _content_only(obj: dict[str, Any]) -> dict[str, Any]:
    md = obj.get("metadata", {})
    out = {k: v for k, v in obj.items() if k not in ("metadata", "status")}
    out["metadata"] = {k: md[k] for k in ("name", "namespace") if k in md}
    spec = out.get("spec")
    if isinstance(spec, dict):
        spec = dict(spec)
        for key in _STRIP_SPEC.get(str(obj.get("kind")), ()):
            spec.pop(key, None)
        if obj.get("kind") == "Service" and isinstance(spec.get("ports"), list):
            spec["ports"] = [{k: v for k, v in p.items() if k != "nodePort"}
                             for p in spec["ports"]]
        out["spec"] = spec
    return out
