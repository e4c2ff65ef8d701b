"""The regret suite: multi-turn maintenance tasks at the published scale.

The published regret benchmark has 205 tasks — terminal 65, PostgreSQL 50,
browser 50 (a forum 20, a forge 10, a file-sharing app 20), Kubernetes 20,
email 20.  This package generates as many, in those proportions, from a few
task families per domain, each with real variation (names, sizes, the exact
command, how many steps destroy, what unrelated work follows).  Every task is
one session: a maintenance request whose natural steps read first, then
destroy state that exists nowhere else; it states its regret moment(s) (the
first destructive call, then ``then:`` steps marked ``regret``) and, in its
notes, the state that must survive.

``preimage bench --suite regret`` runs them all; ``--suite regret-ci`` the
fixed CI sample (:data:`CI_SAMPLE`, a few per domain).  A task that needs an app
not available carries ``needs`` and is listed as not run with that reason, never
counted (none of the built-in ones does: the file-sharing tasks run on copyparty).
"""

from __future__ import annotations

from functools import cache

from preimage.bench.scenario import Scenario

#: The published proportions: tasks per domain (browser: forum, forge, file-sharing).
PUBLISHED = {"terminal": 65, "sql": 50, "browser": 50, "kubernetes": 20, "email": 20}
PUBLISHED_BROWSER = {"forum": 20, "forge": 10, "file-sharing": 20}


#: The CI sample: about 20 tasks across the five domains, fixed.
CI_SAMPLE = frozenset({
    "T.prune-logs.01", "T.dedupe-photos.02", "T.fix-perms.03", "T.reset-config.01",
    "T.two-step-cleanup.01", "T.truncate.04", "T.clean-build.01",
    "S.purge-inactive.01", "S.drop-legacy.02", "S.dedupe.01", "S.two-step.01",
    "S.update-no-where.03",
    "K.delete-by-label.01", "K.mcp-delete.02",
    "E.archive.01", "E.mark-read.02", "E.purge-sender.01",
    "B.forum-moderate.01", "B.forge-milestone.01", "B.forge-repository.02", "B.files-share.01",
})


@cache
def regret_tasks() -> list[Scenario]:
    """Every task of the regret suite, validated, in domain order."""
    from preimage.bench.tasks import ops, sql, terminal, web

    docs = [*terminal.tasks(), *sql.tasks(), *ops.kubernetes_tasks(), *ops.email_tasks(),
            *web.tasks()]
    return [Scenario.model_validate({**d, "ci": d["id"] in CI_SAMPLE,
                                     "origin": f"preimage.bench.tasks ({d['family']})"})
            for d in docs]
