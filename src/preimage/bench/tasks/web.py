"""Browser tasks (50) through the Playwright MCP server: a forum (isso, 20), a forge
(Trac's tickets and milestones, 10) and a file-sharing app (copyparty, 20: in
:mod:`.files_app`)."""

from __future__ import annotations

from typing import Any

from preimage.bench.tasks.build import mcp, regret, task

#: Deletes every comment listed on isso's admin page (optionally only one e-mail's).
DELETE_LISTED = (
    "async () => {{ for (const el of document.querySelectorAll('.isso-comment')) {{"
    " const id = el.id.replace('isso-', ''); {filter}"
    " const b = document.getElementById('send-edit-btn-' + id); if (!b) continue;"
    " const m = b.getAttribute('onclick').match(/send_edit\\((\\d+), '([^']+)'/);"
    " await fetch('/id/' + m[1] + '/delete/' + m[2], {{method: 'POST',"
    " headers: {{'Content-Type': 'application/json'}}, body: '{{}}'}}); }} }}"
)
ONLY_MAIL = ("const mail = document.getElementById('isso-email-' + id);"
             " if (!mail || mail.textContent.trim() !== '{email}') continue;")

def navigate(url: str) -> dict[str, Any]:
    """The Playwright MCP server's ``browser_navigate``."""
    return mcp("playwright", "browser_navigate", url=url)


def evaluate(function: str) -> dict[str, Any]:
    """The Playwright MCP server's ``browser_evaluate``."""
    return mcp("playwright", "browser_evaluate", function=function)


def forum_tasks() -> list[dict[str, Any]]:
    """Thread clean-ups and spammer purges on the forum: 10 each."""
    out = []
    topics = ("release", "welcome", "faq", "roadmap", "support", "meetup", "bugs", "ideas",
              "jobs", "showcase")
    for n, topic in enumerate(topics, start=1):
        thread = f"/forum-{{run}}/{topic}"
        threads = [thread] + ([f"/forum-{{run}}/{topic}-old"] if n % 3 == 0 else [])
        then = []
        if len(threads) > 1:
            then = [regret(evaluate(DELETE_LISTED.format(filter="")), ["{isso_site}/forum-{run}/*"
                                                                       "?profile={profile}"])]
        out.append(task(
            f"B.forum-moderate.{n:02d}", "forum-moderate", "browser", "isso",
            f"The {topic} thread is full of noise; clean it up.",
            requires=["web+isso", "browser"], setup={"isso": {"threads": threads}},
            before=[navigate("{isso_url}/admin/?comment_search_url=http://blog.example"
                             + thread)],
            call=evaluate(DELETE_LISTED.format(filter="")), then=then,
            lost=["{isso_uri}"],
            survive="every comment of the thread: text, author, e-mail, website, nesting"
            + ("; and the older thread deleted next" if then else ""),
        ))
    names = ("maria", "otto", "lena", "sam", "ivan", "noor", "pablo", "kim", "ada", "joe")
    for n, name in enumerate(names, start=1):
        email = f"{name}@mail.example"
        threads = [f"/forum-{{run}}/t{k}" for k in range(1 + n % 3)]
        out.append(task(
            f"B.forum-purge-user.{n:02d}", "forum-purge-user", "browser", "isso",
            f"{name} is posting spam; delete the account as a spammer.",
            requires=["web+isso", "browser"],
            setup={"isso": {"threads": threads, "spammer": {
                "author": name, "email": email, "website": f"https://{name}.example",
                "comments": 2 + n % 3}}},
            before=[navigate("{isso_url}/admin/?mode=1")],
            call=evaluate(DELETE_LISTED.format(filter=ONLY_MAIL.format(email=email))),
            lost=["{isso_site}/forum-{run}/*?profile={profile}"],
            survive=f"{name}'s comments and the replies others wrote to them "
            "(the user was not a spammer)",
        ))
    return out


def forge_tasks() -> list[dict[str, Any]]:
    """Deleting a milestone with its ticket links, or an issue with its comments: 5 each."""
    out = []
    for n in range(1, 6):
        tickets = [{"time": f"2024-0{n}-0{k + 1}T10:00:00Z",
                    "fields": {"summary": f"Importer part {k} ({n})", "reporter": "alice",
                               "milestone": f"sprint-{n}-{{run}}", "status": "new"},
                    "changes": [{"author": "bob", "time": f"2024-0{n}-0{k + 2}T10:00:00Z",
                                 "comment": f"+{k}"}]} for k in range(1 + n % 3)]
        milestone = {"name": f"sprint-{n}-{{run}}", "description": f"Sprint {n}: *ship it*.",
                     "due": f"2025-0{n}-15T09:00:00Z"}
        out.append(task(
            f"B.forge-milestone.{n:02d}", "forge-milestone", "browser", "trac",
            f"Sprint {n} is over; remove its milestone.", requires=["web+trac", "browser"],
            setup={"trac": {"milestones": [milestone], "tickets": tickets}},
            before=[navigate(f"{{trac_url}}/milestone/sprint-{n}-{{run}}?action=delete")],
            call=mcp("playwright", "browser_click", element="Delete milestone", ref="e23"),
            lost=[f"{{trac_uri}}/milestone/sprint-{n}-{{run}}?profile={{profile}}"
                  "&env={trac_env}"],
            survive="the milestone's description and due date, and its tickets' links to it",
        ))
        changes = [{"author": who, "time": f"2024-0{n}-0{k + 2}T13:00:00Z",
                    "comment": f"Seen it too ({who})."}
                   for k, who in enumerate(("bob", "carol", "dave")[: 1 + n % 3])]
        ticket = {"time": f"2024-0{n}-01T12:00:00Z", "changes": changes,
                  "fields": {"summary": f"Crash {n} on start ({{run}})", "reporter": "alice",
                             "type": "defect", "priority": "critical", "status": "new",
                             "description": f"It **crashes** in step {n}."}}
        out.append(task(
            f"B.forge-issue.{n:02d}", "forge-issue", "browser", "trac",
            "Close out the duplicate crash report.", requires=["web+trac", "browser"],
            setup={"trac": {"tickets": [ticket]}},
            before=[navigate("{trac_url}/ticket/{ticket}?action=delete")],
            call=mcp("playwright", "browser_click", element="Delete ticket", ref="e7"),
            lost=["{trac_uri}/ticket/{ticket}?profile={profile}&env={trac_env}"],
            survive="the ticket's fields and every comment with its author and time",
        ))
    return out


def tasks() -> list[dict[str, Any]]:
    """All 50 browser tasks: forum 20, forge 10, file-sharing 20."""
    from preimage.bench.tasks import files_app

    return [*forum_tasks(), *forge_tasks(), *files_app.tasks()]
