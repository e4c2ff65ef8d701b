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

from preimage._errors import UsageError
from preimage.bench.systems.base import CallOutcome, Sandbox, System, fixtures_dir, load_fixture


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

    def kubectl(self, *args: str, stdin: str | None = None, timeout: float = 120) -> CallOutcome:
        """Run kubectl against the cluster's context."""
        cmd = [self._kubectl_path(), f"--kubeconfig={self.kubeconfig}"]
        if self.context:
            cmd.append(f"--context={self.context}")
        proc = subprocess.run(
            [*cmd, *args], input=stdin, capture_output=True, text=True, timeout=timeout,
        )
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
