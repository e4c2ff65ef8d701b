"""Tier 2 for Kubernetes: ``kubectl``, ``helm`` and Kubernetes MCP tools.

The context comes from ``--context`` or the kubeconfig's current context,
the namespace from ``-n``, the manifest or the context's default.  Objects
named on the command line or in ``-f`` manifests become object targets;
``--all`` and ``-l`` become resource-wide targets; deleting a namespace or
uninstalling a Helm release captures the whole namespace.
"""

from __future__ import annotations

import os
from dataclasses import replace
from pathlib import Path
from typing import Any
from urllib.parse import quote

import yaml

from preimage.connectors.kubernetes.address import ALL_NAMESPACES, k8s_uri
from preimage.layer.call import ToolCall
from preimage.layer.context import Context
from preimage.layer.deciding.extract import finding, shell_extractor, tool_extractor, unknown
from preimage.layer.deciding.rules import Rule
from preimage.layer.decision import Finding, Impact, PlannedTarget, Tier
from preimage.layer.reading.argv import Args, parse_args
from preimage.layer.reading.shell import SimpleCommand, read_small, resolve
from preimage.layer.reading.words import Word

KUBECTL_OPTS = ["-n", "--namespace", "--context", "--kubeconfig", "-l", "--selector", "-f",
                "--filename", "-k", "--kustomize", "-o", "--output", "--field-selector", "-s",
                "--server", "--cluster", "--user", "--token", "--as", "--as-group", "-p",
                "--patch", "--type", "--replicas", "--timeout", "--grace-period", "-c",
                "--container", "--image", "--port", "--for", "--patch-file", "--kube-context",
                "--version", "--values", "--set", "--set-string", "--revision",
                "--field-manager", "--pod-selector", "--prune-allowlist"]
# Not here, though they look like it: --overwrite and -i/--stdin are switches, and a bare
# --cascade or --dry-run takes its default (kubectl reads a value only after `=`), so none
# of them may swallow the word after it — that word is a kind or a name.
ALIASES = {
    "po": "pods", "pod": "pods", "svc": "services", "service": "services", "deploy": "deployments",
    "deployment": "deployments", "rs": "replicasets", "replicaset": "replicasets",
    "sts": "statefulsets", "statefulset": "statefulsets", "ds": "daemonsets",
    "daemonset": "daemonsets", "cm": "configmaps", "configmap": "configmaps", "secret": "secrets",
    "ns": "namespaces", "namespace": "namespaces", "pv": "persistentvolumes",
    "persistentvolume": "persistentvolumes", "pvc": "persistentvolumeclaims",
    "persistentvolumeclaim": "persistentvolumeclaims", "sa": "serviceaccounts",
    "serviceaccount": "serviceaccounts", "ing": "ingresses", "ingress": "ingresses",
    "cj": "cronjobs", "cronjob": "cronjobs", "job": "jobs", "hpa": "horizontalpodautoscalers",
    "netpol": "networkpolicies", "crd": "customresourcedefinitions", "crds":
    "customresourcedefinitions", "customresourcedefinition": "customresourcedefinitions",
    "sc": "storageclasses", "storageclass": "storageclasses", "no": "nodes", "node": "nodes",
    "pdb": "poddisruptionbudgets", "quota": "resourcequotas", "limits": "limitranges",
    "role": "roles", "rolebinding": "rolebindings", "clusterrole": "clusterroles",
    "clusterrolebinding": "clusterrolebindings", "ep": "endpoints", "ev": "events", "all": "all",
}
# Deleting an owner deletes what it owns (garbage collection): capture those too.
OWNED = {"deployments": "replicasets", "cronjobs": "jobs", "replicasets": "pods",
         "statefulsets": "persistentvolumeclaims"}
CLUSTER_SCOPED = {"namespaces", "nodes", "persistentvolumes", "storageclasses", "clusterroles",
                  "clusterrolebindings", "customresourcedefinitions", "priorityclasses",
                  "ingressclasses", "mutatingwebhookconfigurations",
                  "validatingwebhookconfigurations", "apiservices", "certificatesigningrequests",
                  "csidrivers", "csinodes", "volumeattachments", "runtimeclasses"}
_BUILTIN_GROUPS = ("apps", "batch", "extensions", "policy", "autoscaling", "networking.k8s.io",
                   "rbac.authorization.k8s.io", "storage.k8s.io", "apiextensions.k8s.io", "v1")


def resource_name(raw: str) -> str:
    """kubectl's spelling of a resource (``deploy``, ``Deployment``, ``deployments.apps``) → plural."""
    r = raw.lower()
    for g in _BUILTIN_GROUPS:
        if r.endswith("." + g):
            r = r[: -len(g) - 1]
            break
    if r in ALIASES:
        return ALIASES[r]
    if "." in r or r.endswith("s"):
        return r
    if r.endswith("y"):
        return r[:-1] + "ies"
    return r + ("es" if r.endswith(("ss", "x", "ch", "sh")) else "s")


def kube_context(explicit: str | None, env: dict[str, str], home: str) -> tuple[str, str]:
    """``(context, default namespace)`` from ``--context`` or the kubeconfig."""
    paths = (env.get("KUBECONFIG") or os.path.join(home, ".kube", "config")).split(":")
    for path in paths:
        try:
            doc = yaml.safe_load(Path(path).read_text()) or {}
        except (OSError, yaml.YAMLError):
            continue
        ctx = explicit or doc.get("current-context") or ""
        for c in doc.get("contexts") or []:
            if isinstance(c, dict) and c.get("name") == ctx:
                return ctx, (c.get("context") or {}).get("namespace") or "default"
        return ctx, "default"
    return explicit or "", "default"


def manifest_objects(text: str) -> list[dict[str, Any]]:
    """Objects in a YAML/JSON manifest (``List`` kinds flattened)."""
    out: list[dict[str, Any]] = []
    try:
        docs = list(yaml.safe_load_all(text))
    except yaml.YAMLError:
        return out
    for d in docs:
        if not isinstance(d, dict):
            continue
        if d.get("kind", "").endswith("List") and isinstance(d.get("items"), list):
            out.extend(i for i in d["items"] if isinstance(i, dict))
        elif d.get("kind"):
            out.append(d)
    return out


def _object_targets(ctx_name: str, ns: str, objs: list[dict[str, Any]],
                    why: str) -> list[PlannedTarget]:
    out = []
    for o in objs:
        res = resource_name(str(o.get("kind", "")))
        meta = o.get("metadata") or {}
        name = meta.get("name")
        if res == "namespaces" and name:
            out.append(PlannedTarget(k8s_uri(ctx_name, name), why, external=True))
            continue
        scope = None if res in CLUSTER_SCOPED else (meta.get("namespace") or ns)
        out.append(PlannedTarget(k8s_uri(ctx_name, scope, res, name), why, external=True))
    return out


def kubectl_targets(words: list[Word], cmd_cwd: str, env: dict[str, str], home: str,
                    stdin: str | None) -> tuple[str, list[PlannedTarget], bool, list[str]]:
    """``(verb, targets, wide, notes)`` of a kubectl command line (without ``kubectl``)."""
    args = parse_args(words, KUBECTL_OPTS)
    verb = args.texts[0] if args.texts else ""
    ctx_name, default_ns = kube_context(args.value("--context"), env, home)
    ns = args.value("-n", "--namespace") or default_ns
    all_ns = args.has("-A", "--all-namespaces")
    selector = args.value("-l", "--selector")
    why = f"kubectl {verb} changes it"
    notes: list[str] = []
    targets: list[PlannedTarget] = []
    files = args.values("-f", "--filename")
    for f in files:
        text = stdin if f == "-" else None
        if text is None and "://" not in f:
            path = f if f.startswith("/") else os.path.join(cmd_cwd, f)
            if os.path.isdir(path):
                names = [n for n in sorted(os.listdir(path))
                         if n.endswith((".yaml", ".yml", ".json"))]
                text = "\n---\n".join(read_small(os.path.join(path, n)) or "" for n in names)
            else:
                text = read_small(path)
        objs = manifest_objects(text or "")
        if not objs:
            notes.append(f"cannot read the manifest {f}; the namespace {ns} is captured")
            targets.append(PlannedTarget(k8s_uri(ctx_name, ns), why, external=True))
        targets += _object_targets(ctx_name, ns, objs, why)
    if args.values("-k", "--kustomize"):
        targets.append(PlannedTarget(k8s_uri(ctx_name, ns), why, external=True))
        notes.append("kustomize output is not expanded; the whole namespace is captured")
    dynamic = dynamic_names(args)
    # `label`/`annotate`/`taint`/`set env` take KEY=VALUE and KEY- words after the object:
    # no object's name has an `=` in it or ends in `-`.
    rest = [r for r in args.texts[1:]
            if r in dynamic or not ("=" in r or (verb in EDIT_VERBS and r.endswith("-")))]
    if verb in NODE_VERBS and not files:
        return verb, node_targets(ctx_name, verb, rest, args, dynamic_names(args)), True, notes
    if verb in ("scale", "autoscale", "rollout", "set") and rest and "/" not in rest[0] \
            and rest[0] in ("restart", "undo", "pause", "resume", "image", "env", "resources"):
        rest = rest[1:]
    wide = bool(selector) or args.has("--all") or all_ns
    if rest and not files:
        kinds: list[tuple[str, str | None]] = []
        if "/" in rest[0] or rest[0] in dynamic:
            for r in rest:
                k, _, n = r.partition("/")
                if not k:  # "$obj": kind and name come from a shell variable
                    notes.append(f"`kubectl {verb}` names its object through a shell variable")
                    continue
                # "pv/$name": the whole kind, since the name is only known when it runs
                kinds.append((resource_name(k), None if r in dynamic else n or None))
        else:
            names = rest[1:]
            if any(n in dynamic for n in names):
                names = []  # a name from a shell variable: every object of the kind
            for k in rest[0].split(","):
                res = resource_name(k)
                if names:
                    kinds += [(res, n) for n in names]
                else:
                    kinds.append((res, None))
        for res, name in kinds:
            if res == "all":
                targets.append(PlannedTarget(k8s_uri(ctx_name, ns, selector=selector), why,
                                             external=True))
                wide = True
            elif res == "namespaces" and name:
                targets.append(PlannedTarget(k8s_uri(ctx_name, name), why, external=True))
                wide = True
            elif res == "customresourcedefinitions" and name:
                targets.append(PlannedTarget(k8s_uri(ctx_name, None, res, name), why, external=True))
                targets.append(PlannedTarget(k8s_uri(ctx_name, ALL_NAMESPACES, name), why,
                                             external=True))
            else:
                scope = None if res in CLUSTER_SCOPED else (ALL_NAMESPACES if all_ns else ns)
                targets.append(PlannedTarget(k8s_uri(ctx_name, scope, res, name,
                                                     selector=None if name else selector),
                                             why, external=True))
                if verb == "delete" and res in OWNED and res != "replicasets":
                    targets.append(PlannedTarget(k8s_uri(ctx_name, scope, OWNED[res]),
                                                 f"objects the deleted {res} own", external=True))
                if res == "persistentvolumes" and verb == "delete":
                    targets.append(PlannedTarget(k8s_uri(ctx_name, ALL_NAMESPACES,
                                                         "persistentvolumeclaims"),
                                                 "PVCs bound to the deleted PVs", external=True))
    if args.has("--prune"):
        targets.append(PlannedTarget(k8s_uri(ctx_name, ns), "apply --prune deletes in it",
                                     external=True))
        wide = True
    return verb, targets, wide, notes


# `kubectl drain|cordon|uncordon NODE...` name nodes, not a kind: the first word is a node.
NODE_VERBS = ("drain", "cordon", "uncordon")
EDIT_VERBS = ("label", "annotate", "taint")


def dynamic_names(args: Args) -> set[str]:
    """The positional words a shell variable supplies (known only when the line runs)."""
    return {w.text for w in args.positionals[1:] if w.dynamic}


def node_targets(ctx_name: str, verb: str, names: list[str], args: Args,
                 dynamic: set[str]) -> list[PlannedTarget]:
    """The nodes a drain/cordon/uncordon names (all nodes for ``-l`` or a name from a
    variable) and, for a drain, every pod it may evict: the pods bound to each named node,
    in any namespace — or, when the nodes are not known before the line runs, every pod."""
    why = f"kubectl {verb} changes it"
    named = [n for n in names if n not in dynamic]
    every = not named or len(named) < len(names) or bool(args.value("-l", "--selector"))
    if every:
        targets = [PlannedTarget(k8s_uri(ctx_name, None, "nodes"), why, external=True)]
    else:
        targets = [PlannedTarget(k8s_uri(ctx_name, None, "nodes", n), why, external=True)
                   for n in named]
    if verb == "drain" and every:
        targets.append(PlannedTarget(k8s_uri(ctx_name, ALL_NAMESPACES, "pods"),
                                     f"drain evicts the pods on {' '.join(names) or 'the nodes'}",
                                     external=True))
    elif verb == "drain":
        pods = args.value("--pod-selector") or None  # drain evicts only the pods it matches
        targets += [PlannedTarget(k8s_uri(ctx_name, ALL_NAMESPACES, "pods", selector=pods,
                                          node=n),
                                  f"drain evicts the pods on {n}", external=True) for n in named]
    return targets


@shell_extractor("kubectl")
def kubectl(cmd: SimpleCommand, rule: Rule, ctx: Context) -> Finding:
    """``kubectl delete/apply/patch/scale/edit/replace/…``: the objects it names."""
    dry = [w for w in cmd.argv if w.startswith("--dry-run")]
    if dry and not any(w in ("--dry-run=none",) for w in dry):
        return finding(cmd, rule, tier=Tier.READ_ONLY, impact=Impact.NONE)
    verb, targets, wide, notes = kubectl_targets(cmd.words[1:], cmd.cwd, cmd.env, ctx.home,
                                                 cmd.stdin_text())
    if not targets:
        return unknown(cmd, rule, f"`kubectl {verb}` names no object the layer can address")
    return finding(cmd, rule, targets=targets, wide=wide, notes=notes, outside_workspace=True)


@shell_extractor("helm")
def helm(cmd: SimpleCommand, rule: Rule, ctx: Context) -> Finding:
    """``helm uninstall/upgrade/rollback RELEASE``: the release's namespace."""
    args = parse_args(cmd.words[1:], KUBECTL_OPTS)
    ctx_name, default_ns = kube_context(args.value("--kube-context"), cmd.env, ctx.home)
    ns = args.value("-n", "--namespace") or default_ns
    if args.has("--dry-run"):
        return finding(cmd, rule, tier=Tier.READ_ONLY, impact=Impact.NONE)
    release = args.texts[1] if len(args.texts) > 1 else "?"
    return finding(cmd, rule, outside_workspace=True, wide=True, targets=[PlannedTarget(
        k8s_uri(ctx_name, ns), f"helm {args.texts[0]} {release} changes objects in it",
        external=True)])


@tool_extractor("mcp_kubernetes")
def mcp_kubernetes(call: ToolCall, rule: Rule, ctx: Context) -> Finding:
    """Kubernetes MCP tools, turned into the kubectl line they stand for."""
    a = call.input
    verb = rule.params.get("verb") or str(a.get("subCommand") or a.get("command") or "")
    words = [verb]
    kind = a.get("resourceType") or a.get("kind") or rule.params.get("kind")
    name = a.get("name")
    if (kind and verb not in ("apply", "create")) or (kind and name):
        words.append(str(kind))
    if name and verb not in ("uninstall",):
        words.append(str(name))
    for key, opt in (("namespace", "-n"), ("context", "--context"), ("labelSelector", "-l")):
        if a.get(key):
            words += [opt, str(a[key])]
    if a.get("allNamespaces"):
        words.append("-A")
    if a.get("dryRun"):
        words.append("--dry-run=server")
    manifest = a.get("manifest") or a.get("resource") or a.get("yaml")
    if isinstance(manifest, str):
        words += ["-f", "-"]
    elif isinstance(a.get("filename"), str):
        words += ["-f", str(a["filename"])]
    got = server_kubeconfig(call, rule, ctx)
    if isinstance(got, Finding):
        return got
    env, own = got
    if verb == "node":   # node_management: cordon / uncordon / drain NODE
        ctx_name, _ = kube_context(a.get("context"), env, ctx.home)
        node = str(a.get("nodeName") or "")
        if not node:
            return unknown(call, rule, "node_management names no node")
        if a.get("dryRun"):
            return finding(call, rule, tier=Tier.READ_ONLY, impact=Impact.NONE)
        targets = [PlannedTarget(k8s_uri(ctx_name, None, "nodes", node, kubeconfig=own),
                                 f"{a.get('operation') or 'node_management'} changes it",
                                 external=True)]
        if a.get("operation") not in ("cordon", "uncordon"):   # drain evicts its pods
            targets.append(PlannedTarget(k8s_uri(ctx_name, ALL_NAMESPACES, "pods",
                                                 kubeconfig=own, node=node),
                                         f"drain evicts the pods on {node}", external=True))
        return finding(call, rule, targets=targets, outside_workspace=True,
                       wide=len(targets) > 1)
    if verb in ("uninstall", "upgrade", "install", "rollback"):
        ctx_name, default_ns = kube_context(a.get("context"), env, ctx.home)
        ns = str(a.get("namespace") or default_ns)
        return finding(call, rule, outside_workspace=True, wide=True, targets=[PlannedTarget(
            k8s_uri(ctx_name, ns, kubeconfig=own), f"helm {verb} changes objects in it",
            external=True)])
    if a.get("dryRun") or (verb == "rollout" and a.get("subCommand") in ("status", "history")):
        return finding(call, rule, tier=Tier.READ_ONLY, impact=Impact.NONE)
    _, targets, wide, notes = kubectl_targets([Word(w) for w in words], ctx.workspace, env,
                                              ctx.home, manifest if isinstance(manifest, str) else None)
    if not targets:
        return unknown(call, rule, f"cannot tell which objects `{call.tool}` changes")
    if own:
        targets = [replace(t, uri=with_kubeconfig(t.uri, own)) for t in targets]
    return finding(call, rule, targets=targets, wide=wide, notes=notes, outside_workspace=True)


def server_kubeconfig(call: ToolCall, rule: Rule,
                      ctx: Context) -> Finding | tuple[dict[str, str], str | None]:
    """``(the server's environment, the kubeconfig of its own definition or None)`` of a
    Kubernetes MCP server, or the unknown finding when it builds a kubeconfig preimage
    does not read."""
    # The server reads its kubeconfig from its own environment (its definition's env
    # on top of the launcher's): the backup and its restore read the same file.
    from preimage.layer.deciding.mcp_launch import server_env, server_spec

    spec = server_spec(call, ctx)
    env = server_env(spec, ctx)
    inline = [v for v in ("KUBECONFIG_YAML", "KUBECONFIG_JSON", "K8S_SERVER") if env.get(v)]
    if inline:   # mcp-server-kubernetes builds a kubeconfig of its own from these
        return unknown(call, rule, f"the Kubernetes MCP server reads its cluster from "
                       f"{inline[0]} in its environment, which preimage does not read: give it "
                       "a kubeconfig file (KUBECONFIG or KUBECONFIG_PATH)")
    if env.get("KUBECONFIG_PATH"):   # the server's order: KUBECONFIG_PATH before KUBECONFIG
        env["KUBECONFIG"] = env["KUBECONFIG_PATH"]
    # A kubeconfig of the server's own definition travels in the target URIs: the capture
    # and a later `preimage restore` read that file, whatever their environment says.
    own_env: dict[str, Any] = spec["env"] if isinstance(spec.get("env"), dict) else {}
    # (A server the proxy started inherits the proxy's environment: its KUBECONFIG is the
    # server's own setting too.)
    defined = own_env.get("KUBECONFIG_PATH") or own_env.get("KUBECONFIG") or (
        env.get("KUBECONFIG") if spec.get("harness") == "mcp-proxy" else None)
    own = env["KUBECONFIG"] if defined and (
        defined != ctx.env.get("KUBECONFIG") or spec.get("harness") == "mcp-proxy") else None
    return env, own


def with_kubeconfig(uri: str, path: str) -> str:
    """``uri`` (a ``k8s://`` target) reading its context from the kubeconfig at ``path``."""
    if not uri.startswith("k8s://"):
        return uri
    return f"{uri}{'&' if '?' in uri else '?'}kubeconfig={quote(path, safe='/')}"


__all__ = ["kubectl", "resolve"]
