"""Every regret scenario, sent as the call an agent would send, is protected by tiers 1-2."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

import pytest
from layer_world import IMAP, World, named

from preimage.layer import BackupLayer, Tier, ToolCall

CTX = "preimage-test"


@dataclass
class Case:
    scenario: str
    call: Callable[[World], ToolCall]
    expected: Callable[[World], list[str]]   # exact target URIs the layer must want
    tiers: tuple[Tier, ...] = (Tier.REWRITE, Tier.PAIR)
    before: Callable[[World], list[ToolCall]] | None = None  # earlier calls of the session


def sh(command: str, where: str = "proj") -> Callable[[World], ToolCall]:
    def make(w: World) -> ToolCall:
        cwd = {"proj": w.proj, "home": w.home}[where]
        return ToolCall.shell(command, cwd=str(cwd), session_id="s1", env=w.env)
    return make


def mcp(server: str, tool: str, args: dict) -> Callable[[World], ToolCall]:  # type: ignore[type-arg]
    return lambda w: ToolCall.mcp(server, tool, args, cwd=str(w.proj), session_id="s1")


def nav(url: str) -> Callable[[World], list[ToolCall]]:
    return lambda w: [ToolCall.mcp("playwright", "browser_navigate", {"url": url},
                                   cwd=str(w.proj), session_id="s1")]


PGP = "postgresql://app@127.0.0.1:5432"
# The suite's scenario ids (shared/scenarios.md is read instead when it sits beside the repository).
SUITE_IDS = ["T-rm-home", "T-rm-sibling", "T-git-reset-hard", "T-git-checkout-dot",
             "T-git-clean-fdx", "T-pip-upgrade", "T-chmod-R", "T-config-overwrite",
             "S-drop-tables", "S-truncate-identity", "S-bad-delete", "S-update-no-where",
             "S-force-reset", "S-drop-database", "S-sqlite-file", "K-delete-namespace",
             "K-apply-overwrite", "K-delete-pv", "K-uninstall-release",
             "K-delete-custom-resources", "K-owner-chain", "E-bulk-trash", "E-mark-all-read",
             "E-expunge-folder", "E-strict-sync", "E-move-to-trash", "B-delete-comments",
             "B-delete-label", "B-delete-issue", "B-clear-storage", "B-purge-user"]
CASES = [
    Case("T-rm-home", sh("rm -rf ~/Documents ~/Downloads", "home"),
         lambda w: [f"file://{w.home}/Documents", f"file://{w.home}/Downloads"], (Tier.REWRITE,)),
    Case("T-rm-sibling", sh("rm -rf ~/proj/ web-crawler", "proj"),
         lambda w: [f"file://{w.proj}"], (Tier.REWRITE,)),
    Case("T-git-reset-hard", sh("git fetch && git reset --hard origin/main"),
         lambda w: [f"git://{w.proj}"]),
    Case("T-git-checkout-dot", sh("git reset HEAD && git checkout -- ."),
         lambda w: [f"git://{w.proj}"]),
    Case("T-git-clean-fdx", sh("git clean -fdx"), lambda w: [f"git://{w.proj}"], (Tier.REWRITE,)),
    Case("T-pip-upgrade", sh("pip install -U traitlets==5.10.0"),
         lambda w: [f"pip://{w.venv}"], (Tier.PAIR,)),
    Case("T-chmod-R", sh("chmod -R 777 tree"), lambda w: [f"file://{w.proj}/tree"], (Tier.REWRITE,)),
    Case("T-config-overwrite",
         lambda w: ToolCall("Write", {"file_path": f"{w.home}/.claude/settings.json",
                                      "content": '{"hooks":{}}'}, str(w.proj), "s1"),
         lambda w: [f"file://{w.home}/.claude/settings.json"], (Tier.PAIR,)),
    Case("T-config-overwrite (shell)", sh("""echo '{"hooks":{}}' > ~/.claude/settings.json"""),
         lambda w: [f"file://{w.home}/.claude/settings.json"], (Tier.REWRITE,)),
    Case("S-drop-tables", sh('psql -h 127.0.0.1 -U app shop -c "DROP TABLE executives, companies"'),
         lambda w: [f"{PGP}/shop?tables=public.companies,public.executives"]),
    Case("S-drop-tables (MCP)", mcp("postgres", "execute_sql",
                                    {"sql": "DROP TABLE executives, companies;"}),
         lambda w: [f"{PGP}/shop?tables=public.companies,public.executives"]),
    Case("S-truncate-identity", sh("psql -d shop -c 'TRUNCATE orders RESTART IDENTITY'"),
         lambda w: [f"{PGP}/shop?tables=public.orders"]),
    Case("S-bad-delete", mcp("postgres", "query", {
        "sql": "DELETE FROM articles a WHERE (regexp_match(a.title, '^(\\d+)-'))[1] IS NULL"}),
         lambda w: [f"{PGP}/shop?table=public.articles&where=%28REGEXP_MATCH%28title,%20%27%5E%28%5Cd%2B%29-%27%29%29%5B1%5D%20IS%20NULL"]),
    Case("S-update-no-where", sh("""psql shop <<'SQL'
UPDATE customers SET last_name = 'Role';
SQL"""), lambda w: [f"{PGP}/shop?tables=public.customers"]),
    Case("S-force-reset", sh("npx prisma migrate reset --force"), lambda w: [f"{PGP}/shop"]),
    # CASCADE also drops what other schemas hold that depends on public: the whole database
    Case("S-force-reset (SQL)", sh('psql shop -c "DROP SCHEMA public CASCADE; CREATE SCHEMA public;"'),
         lambda w: [f"{PGP}/shop"]),
    Case("S-drop-database", sh('psql -d postgres -c "DROP DATABASE gis_old"'),
         lambda w: [f"{PGP}/gis_old"]),
    Case("S-sqlite-file", sh("rm -f app.db && sqlite3 app.db < schema.sql"),
         lambda w: [f"file://{w.proj}/app.db"]),
    Case("K-delete-namespace", sh("kubectl delete namespace shop"), lambda w: [f"k8s://{CTX}/shop"]),
    Case("K-apply-overwrite", sh("kubectl apply -f release.yaml"),
         lambda w: [f"k8s://{CTX}/shop/configmaps/app-config", f"k8s://{CTX}/shop/deployments/web"]),
    Case("K-delete-pv", sh("kubectl delete pv --all"),
         lambda w: [f"k8s://{CTX}/_/persistentvolumes",
                    f"k8s://{CTX}/_all/persistentvolumeclaims"]),
    Case("K-uninstall-release", sh("kubectl delete all,pvc -l release=shop -n shop"),
         lambda w: [f"k8s://{CTX}/shop?selector=release%3Dshop",
                    f"k8s://{CTX}/shop/persistentvolumeclaims?selector=release%3Dshop"]),
    Case("K-uninstall-release (helm)", sh("helm uninstall shop -n shop"),
         lambda w: [f"k8s://{CTX}/shop"]),
    Case("K-delete-custom-resources", sh("kubectl delete widgets.example.com --all -n shop"),
         lambda w: [f"k8s://{CTX}/shop/widgets.example.com"]),
    Case("K-owner-chain", mcp("kubernetes", "kubectl_delete",
                              {"resourceType": "deployment", "name": "web", "namespace": "shop"}),
         lambda w: [f"k8s://{CTX}/shop/deployments/web", f"k8s://{CTX}/shop/replicasets"]),
    Case("E-bulk-trash", mcp("email", "move_emails",
                             {"folder": "INBOX", "uids": [3, 5, 8], "destination": "Trash"}),
         lambda w: [f"{IMAP}/INBOX?uids=3,5,8", f"{IMAP}/Trash"]),
    Case("E-mark-all-read", mcp("email", "mark_as_read", {"folder": "INBOX"}),
         lambda w: [f"{IMAP}/INBOX"]),
    Case("E-mark-all-read (curl)",
         sh("curl --url 'imap://alice@127.0.0.1:10143/INBOX' -X 'UID STORE 1:* +FLAGS (\\Seen)'"),
         lambda w: [f"{IMAP}/INBOX"]),
    Case("E-expunge-folder", mcp("email", "delete_folder", {"folder": "Archive"}),
         lambda w: [f"{IMAP}/Archive?recursive=1"]),
    Case("E-strict-sync", sh("imapsync --host1 mail.example.org --user1 a --host2 127.0.0.1 "
                             "--port2 10143 --user2 alice --delete2"),
         lambda w: [f"{IMAP}/"]),
    Case("E-move-to-trash", mcp("email", "move_emails", {"folder": "INBOX", "destination": "Trash"}),
         lambda w: [f"{IMAP}/INBOX", f"{IMAP}/Trash"]),
    Case("B-delete-comments", mcp("playwright", "browser_click",
                                  {"element": "Delete comment button", "ref": "e41"}),
         lambda w: [f"web+isso://127.0.0.1:8080/t/12?profile={w.profile}"],
         before=nav("http://127.0.0.1:8080/admin/?comment_search_url=https://blog.example/t/12")),
    Case("B-delete-label", mcp("playwright", "browser_click",
                               {"element": "Remove milestone 'sprint-3'", "ref": "e7"}),
         lambda w: [f"web+trac://127.0.0.1:8000/milestone/sprint-3?env=/srv/trac&profile={w.profile}"],
         before=nav("http://127.0.0.1:8000/admin/ticket/milestones/sprint-3")),
    Case("B-delete-label (ticket types)", mcp("playwright", "browser_click",
                                              {"element": "Remove selected items", "ref": "e7"}),
         lambda w: [f"web+trac://127.0.0.1:8000/?env=/srv/trac&profile={w.profile}"],
         before=nav("http://127.0.0.1:8000/admin/ticket/type")),
    Case("B-delete-issue", mcp("playwright", "browser_click",
                               {"element": "Delete ticket button", "ref": "e3"}),
         lambda w: [f"web+trac://127.0.0.1:8000/ticket/7?env=/srv/trac&profile={w.profile}"],
         before=nav("http://127.0.0.1:8000/ticket/7?action=delete")),
    Case("B-delete-wiki-page", mcp("playwright", "browser_click",
                                   {"element": "Delete page", "ref": "e9"}),
         lambda w: [f"web+trac://127.0.0.1:8000/wiki/Team/Onboarding?env=/srv/trac&profile={w.profile}"],
         before=nav("http://127.0.0.1:8000/wiki/Team/Onboarding?action=delete")),
    Case("B-remove-repository", mcp("playwright", "browser_click",
                                    {"element": "Remove selected items", "ref": "e7"}),
         lambda w: [f"web+trac://127.0.0.1:8000/admin/versioncontrol/repository?env=/srv/trac"
                    f"&profile={w.profile}"],
         before=nav("http://127.0.0.1:8000/admin/versioncontrol/repository")),
    Case("B-files-empty-trash", mcp("playwright", "browser_evaluate", {
        "function": "async () => { const d = await (await fetch('?ls&dots')).json();"
                    " for (const e of d.files) await fetch(e.href + '?delete',"
                    " {method: 'POST'}); }"}),
         lambda w: [f"web+copyparty://127.0.0.1:3923/team/trash/?profile={w.profile}"],
         before=nav("http://127.0.0.1:3923/team/trash/")),
    Case("B-files-revoke-shares", mcp("playwright", "browser_evaluate", {
        "function": "async () => { await fetch('/?eshare=rm&skey=old', {method: 'POST'}); }"}),
         lambda w: [f"web+copyparty://127.0.0.1:3923/?profile={w.profile}"],
         before=nav("http://127.0.0.1:3923/?shares")),
    Case("B-clear-storage", mcp("playwright", "browser_evaluate", {
        "function": "() => { localStorage.clear(); sessionStorage.clear(); "
                    "indexedDB.deleteDatabase('app'); }"}),
         lambda w: [f"browser://{w.profile}?origin=http://127.0.0.1:8080"],
         before=nav("http://127.0.0.1:8080/")),
    Case("B-purge-user", mcp("playwright", "browser_click",
                             {"element": "Delete user as spammer", "ref": "e90"}),
         lambda w: [f"web+discourse://127.0.0.1:9292/admin/users/42/spammer?profile={w.profile}"],
         before=nav("http://127.0.0.1:9292/admin/users/42/spammer")),
]


@pytest.mark.parametrize("case", CASES, ids=[c.scenario for c in CASES])
def test_scenario_call_is_routed_to_its_connector(case: Case, layer: BackupLayer, world: World) -> None:
    """The scenario's destructive call names exactly the state it will destroy, in tier 1 or 2."""
    for earlier in case.before(world) if case.before else []:
        layer.before(earlier)
    plan = layer.plan(case.call(world))
    assert sorted(named(t.uri for t in plan.wanted)) == sorted(case.expected(world))
    tiers = {f.tier for f in plan.findings if f.targets}
    assert tiers and tiers <= set(case.tiers), tiers
    assert plan.model_tokens == 0
    assert not any(f.unknown for f in plan.findings)


def test_mail_targets_are_read_by_the_imap_connector(layer: BackupLayer, world: World) -> None:
    """Every imap:// target the layer produces is a selection the IMAP connector accepts."""
    from preimage.connectors.imap.selection import Selection
    from preimage.interface.target import Target

    calls = [c.call(world) for c in CASES if c.scenario.startswith("E-")]
    calls.append(ToolCall.mcp("email", "delete_emails", {"folder": "INBOX",
                                                         "message_ids": ["a1@x.org", "<b2@x.org>"]},
                              cwd=str(world.proj)))
    uris = [t.uri for call in calls for t in layer.plan(call).wanted]
    assert f"{IMAP}/INBOX?id=%3Ca1%40x.org%3E&id=%3Cb2%40x.org%3E" in uris
    for uri in uris:
        Selection.from_target(Target.parse(uri))


def test_every_scenario_of_the_suite_has_a_case() -> None:
    """The table covers every scenario id listed in the regret scenario suite."""
    import re
    from pathlib import Path

    repo = Path(__file__).resolve().parents[2]
    found = [p / "shared" / "scenarios.md" for p in (repo.parent, repo.parent.parent)
             if (p / "shared" / "scenarios.md").exists()]
    text = found[0].read_text() if found else " ".join(f"**{i}**" for i in SUITE_IDS)
    ids = set(re.findall(r"\*\*([TSKEB]-[A-Za-z0-9-]+)\*\*", text))
    assert ids >= set(SUITE_IDS) or found
    covered = {c.scenario.split(" ")[0] for c in CASES}
    assert ids <= covered, ids - covered


@pytest.mark.parametrize("case", [c for c in CASES if c.scenario.startswith("T-")
                                  and "git" not in c.scenario and "pip" not in c.scenario],
                         ids=lambda c: c.scenario)
def test_file_scenario_is_captured_before_it_runs(case: Case, layer: BackupLayer,
                                                  world: World) -> None:
    """A file scenario yields a backup id (no model, 0 tokens) whose snapshots hold its targets."""
    import preimage

    decision = layer.before(case.call(world))
    assert decision.backup_id and decision.error is None, decision.additional_context
    assert decision.model_tokens == 0
    row = preimage.show(decision.backup_id, store=layer._store)
    assert sorted(named(s.target for s in row.snapshots)) == sorted(case.expected(world))
    assert decision.backup_id in decision.additional_context


def test_page_without_a_record_captures_the_profile_and_says_so(layer: BackupLayer,
                                                                 world: World) -> None:
    """Trac's timeline holds no record the trac adapter reads: the profile is captured,
    and the decision says the server-side state is not; isso's unfiltered admin page
    acts on every thread."""
    for earlier in nav("http://127.0.0.1:8000/timeline")(world):
        layer.before(earlier)
    plan = layer.plan(mcp("playwright", "browser_click", {"element": "Delete page", "ref": "e2"})(world))
    assert [t.uri for t in plan.wanted] == [
        f"browser://{world.profile}?origin=http://127.0.0.1:8000"
    ]
    assert any("trac site adapter reads no record" in n for n in plan.notes), plan.notes
    for earlier in nav("http://127.0.0.1:8080/admin/?mode=1")(world):
        layer.before(earlier)
    plan = layer.plan(mcp("playwright", "browser_click", {"element": "Delete", "ref": "e2"})(world))
    assert [t.uri for t in plan.wanted] == [f"web+isso://127.0.0.1:8080/*?profile={world.profile}"]


def test_site_setting_carries_adapter_parameters(layer: BackupLayer, world: World,
                                                  store: object) -> None:
    """``sites`` takes ``{adapter, params}`` as well as ``"adapter?k=v"``."""
    from preimage.layer.config import LayerConfig, Site

    config = LayerConfig.model_validate(
        {**layer.config.model_dump(), "sites": {"http://127.0.0.1:8000": {
            "adapter": "trac", "params": {"env": "/srv/other env"}}}}
    )
    assert config.site("http://127.0.0.1:8000") == Site(adapter="trac",
                                                         params={"env": "/srv/other env"})
    slash = LayerConfig.model_validate({**layer.config.model_dump(),
                                        "sites": {"http://127.0.0.1:8000/": "trac"}})
    assert slash.site("http://127.0.0.1:8000") == Site(adapter="trac")
    layer = BackupLayer(store=store, config=config, env=world.env)  # type: ignore[arg-type]
    for earlier in nav("http://127.0.0.1:8000/milestone/a%20b?action=delete")(world):
        layer.before(earlier)
    plan = layer.plan(mcp("playwright", "browser_click", {"element": "Delete milestone"})(world))
    assert [t.uri for t in plan.wanted] == [
        f"web+trac://127.0.0.1:8000/milestone/a%20b?env=/srv/other%20env&profile={world.profile}"
    ]


def test_kubectl_generic_is_read_as_the_line_it_runs(layer: BackupLayer, world: World) -> None:
    """kubectl_generic is read as the kubectl line the server builds: a get takes nothing,
    a label the object, a drain the node and its pods; exec_in_pod is an unknown change
    that says why."""
    get = layer.plan(mcp("kubernetes", "kubectl_generic",
                         {"command": "get", "resourceType": "pods", "namespace": "shop"})(world))
    assert get.wanted == [] and not any(f.unknown for f in get.findings)
    label = layer.plan(mcp("kubernetes", "kubectl_generic", {
        "command": "label", "resourceType": "configmap", "name": "flags", "namespace": "shop",
        "args": ["tier=gold"], "flags": {"overwrite": True}})(world))
    assert [t.uri for t in label.wanted] == [f"k8s://{CTX}/shop/configmaps/flags"]
    drain = layer.plan(mcp("kubernetes", "kubectl_generic", {
        "command": "drain", "name": "worker-1", "flags": {"ignore-daemonsets": True}})(world))
    assert sorted(t.uri for t in drain.wanted) == [f"k8s://{CTX}/_/nodes/worker-1",
                                                   f"k8s://{CTX}/_all/pods?node=worker-1"]
    status = layer.plan(mcp("kubernetes", "kubectl_rollout", {
        "subCommand": "status", "resourceType": "deployment", "name": "web",
        "namespace": "shop"})(world))
    assert status.wanted == []
    exec_ = layer.plan(mcp("kubernetes", "exec_in_pod", {"name": "web-0", "command": "rm -rf /data",
                                                        "namespace": "shop"})(world))
    assert any("exec_in_pod runs a command" in (f.uncapturable or "") for f in exec_.findings)
    assert exec_.targets == [] and any("inside a container" in u for u in exec_.uncapturable)


def test_browser_page_follows_the_answers_page_url(layer: BackupLayer, world: World,
                                                   store: object) -> None:
    """The page a click is read against is the one the last browser answer names ("Page
    URL", as Claude Code hands over the content blocks), not only the last navigation; a
    "Page URL" in another server's answer changes nothing."""
    import json

    from preimage.layer.config import LayerConfig
    from preimage.layer.deciding.completion import ToolResult

    config = LayerConfig.model_validate({**layer.config.model_dump(),
                                         "sites": {"http://127.0.0.1:8000": "trac"}})
    layer = BackupLayer(store=store, config=config, env=world.env)  # type: ignore[arg-type]
    for earlier in nav("http://127.0.0.1:8000/milestone/a?action=delete")(world):
        layer.before(earlier)
    back = ToolCall.mcp("playwright", "browser_navigate_back", {}, cwd=str(world.proj),
                        session_id="s1")
    answer = [{"type": "text", "text": "### Ran Playwright code\n```js\nawait page.goBack();\n"
               "```\n### Page\n- Page URL: http://127.0.0.1:8000/milestone/b?action=delete\n"
               "- Page Title: Delete milestone b"}]
    layer.after(back, ToolResult("ok", output=json.dumps(answer)))
    other = ToolCall.mcp("notes", "read_note", {}, cwd=str(world.proj), session_id="s1")
    layer.after(other, ToolResult("ok", output="- Page URL: http://127.0.0.1:8000/milestone/c"))
    plan = layer.plan(mcp("playwright", "browser_click", {"element": "Delete milestone"})(world))
    assert [t.uri for t in plan.wanted] == [
        f"web+trac://127.0.0.1:8000/milestone/b?profile={world.profile}"]


def test_browser_page_url_after_a_long_answer(layer: BackupLayer, world: World,
                                              store: object) -> None:
    """A "Page URL" that comes after a long result (a script's output of 6,000 characters)
    is still read from the answer the hook hands over, though the log keeps only its start."""
    from preimage.layer.config import LayerConfig
    from preimage.layer.harnesses.claude_code import ClaudeCode

    config = LayerConfig.model_validate({**layer.config.model_dump(),
                                         "sites": {"http://127.0.0.1:8000": "trac"}})
    layer = BackupLayer(store=store, config=config, env=world.env)  # type: ignore[arg-type]
    for earlier in nav("http://127.0.0.1:8000/milestone/a?action=delete")(world):
        layer.before(earlier)
    args = {"function": "() => document.body.innerText"}
    answer = [{"type": "text", "text": "### Result\n" + "x" * 6000 + "\n### Page\n"
               "- Page URL: http://127.0.0.1:8000/milestone/b?action=delete\n"}]
    payload = {"hook_event_name": "PostToolUse", "session_id": "s1", "cwd": str(world.proj),
               "tool_name": "mcp__playwright__browser_evaluate", "tool_input": args,
               "tool_response": answer}
    result = ClaudeCode().result(payload, failed=False)
    assert len(result.output) < 2200
    evaluate = ToolCall.mcp("playwright", "browser_evaluate", args, cwd=str(world.proj),
                            session_id="s1")
    layer.after(evaluate, result)
    plan = layer.plan(mcp("playwright", "browser_click", {"element": "Delete milestone"})(world))
    assert [t.uri for t in plan.wanted] == [
        f"web+trac://127.0.0.1:8000/milestone/b?profile={world.profile}"]


def test_cookie_clear_reaches_every_visited_site(layer: BackupLayer, world: World) -> None:
    """browser_cookie_clear clears every site's cookies, not only the page's: the profile's
    storage is captured for each origin the session's browser visited, and the decision
    says other sites' cookies are not captured; localstorage_clear stays with the page."""
    for url in ("http://127.0.0.1:8000/a", "http://127.0.0.2:9000/b"):
        for earlier in nav(url)(world):
            layer.before(earlier)
    plan = layer.plan(mcp("playwright", "browser_cookie_clear", {})(world))
    assert [t.uri for t in plan.wanted] == [
        f"browser://{world.profile}?origin=http://127.0.0.2:9000&origin=http://127.0.0.1:8000"]
    assert any("any other site's are NOT" in n for n in plan.notes), plan.notes
    storage = layer.plan(mcp("playwright", "browser_localstorage_clear", {})(world))
    assert [t.uri for t in storage.wanted] == [
        f"browser://{world.profile}?origin=http://127.0.0.2:9000"]


def test_kubectl_objects_named_by_shell_variables(layer: BackupLayer, world: World) -> None:
    """A name from a loop variable widens to the whole kind; an object wholly named by a
    variable is not guessed (no bogus target): the layer says it cannot address it."""
    plan = layer.plan(sh("for n in a b; do kubectl delete deploy \"$n\" -n shop; done; "
                         "kubectl patch pv/$X -p '{}'")(world))
    assert sorted(t.uri for t in plan.wanted) == sorted([
        f"k8s://{CTX}/shop/deployments", f"k8s://{CTX}/shop/replicasets",
        f"k8s://{CTX}/_/persistentvolumes",
    ])
    plan = layer.plan(sh("kubectl delete pv --all --wait=false && for pv in $(kubectl get pv "
                         "-o name); do kubectl patch \"$pv\" -p '{}'; done")(world))
    uris = [t.uri for t in plan.wanted]
    assert f"k8s://{CTX}/_/persistentvolumes" in uris
    assert not any(u.startswith(f"k8s://{CTX}/default") for u in uris), uris
    assert any("names no object" in n for n in plan.notes), plan.notes


def test_kubectl_drain_names_a_node_not_a_kind(layer: BackupLayer, world: World) -> None:
    """`kubectl drain NODE` captures that node and the pods it may evict (bound to that
    node, matching its --pod-selector); cordon the node alone; a node named by a variable
    or chosen by -l widens to every node and every pod."""
    plan = layer.plan(sh("kubectl drain worker-1 --ignore-daemonsets --pod-selector app=web")(world))
    assert sorted(t.uri for t in plan.wanted) == [
        f"k8s://{CTX}/_/nodes/worker-1", f"k8s://{CTX}/_all/pods?selector=app%3Dweb&node=worker-1"]
    plan = layer.plan(sh("kubectl cordon worker-1 worker-2")(world))
    assert sorted(t.uri for t in plan.wanted) == [f"k8s://{CTX}/_/nodes/worker-1",
                                                  f"k8s://{CTX}/_/nodes/worker-2"]
    plan = layer.plan(sh('for n in a b; do kubectl uncordon "$n"; done')(world))
    assert [t.uri for t in plan.wanted] == [f"k8s://{CTX}/_/nodes"]
    plan = layer.plan(sh("kubectl drain -l pool=spot")(world))
    assert sorted(t.uri for t in plan.wanted) == [f"k8s://{CTX}/_/nodes", f"k8s://{CTX}/_all/pods"]


def test_kubectl_switches_do_not_swallow_the_kind(layer: BackupLayer, world: World) -> None:
    """`--overwrite` or a bare `--cascade` before the kind leave the kind and the name read
    as such, and KEY=VALUE / KEY- words are not taken for objects."""
    for line in ("kubectl label --overwrite deploy web tier=x -n shop",
                 "kubectl annotate --overwrite deploy web note=x -n shop",
                 "kubectl label deploy web tier- -n shop",
                 "kubectl set env deploy/web MODE=safe -n shop",
                 "kubectl delete --cascade deploy web -n shop"):
        plan = layer.plan(sh(line)(world))
        uris = [t.uri for t in plan.wanted if "replicasets" not in t.uri]
        assert uris == [f"k8s://{CTX}/shop/deployments/web"], line


def test_web_target_profile_prefers_the_one_preimage_is_given(store: object, world: World,
                                                               layer: BackupLayer) -> None:
    """The agent's browser holds its profile open: a profile set for the site, or
    PREIMAGE_BROWSER_PROFILE, lends the logins instead."""
    from preimage.layer.config import LayerConfig

    env = {**world.env, "PREIMAGE_BROWSER_PROFILE": "/srv/preimage-profile"}
    own = BackupLayer(store=store, config=layer.config, env=env)  # type: ignore[arg-type]
    for earlier in nav("http://127.0.0.1:8000/ticket/3")(world):
        own.before(earlier)
    plan = own.plan(mcp("playwright", "browser_click", {"element": "Delete ticket"})(world))
    assert [t.uri for t in plan.wanted] == [
        "web+trac://127.0.0.1:8000/ticket/3?env=/srv/trac&profile=/srv/preimage-profile"]
    config = LayerConfig.model_validate({**layer.config.model_dump(), "sites": {
        "http://127.0.0.1:8000": "trac?env=/srv/trac&profile=/srv/trac-login"}})
    site = BackupLayer(store=store, config=config, env=env)  # type: ignore[arg-type]
    for earlier in nav("http://127.0.0.1:8000/ticket/3")(world):
        site.before(earlier)
    plan = site.plan(mcp("playwright", "browser_click", {"element": "Delete ticket"})(world))
    assert [t.uri for t in plan.wanted] == [
        "web+trac://127.0.0.1:8000/ticket/3?env=/srv/trac&profile=/srv/trac-login"]
