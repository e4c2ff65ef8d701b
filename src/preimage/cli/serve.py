"""``preimage serve``: run, inspect or stop the decision service."""

from __future__ import annotations

import json
import sys
import time

import click


@click.command()
@click.option("--status", "show_status", is_flag=True,
              help="Show the user's service (pid, socket, calls, log).")
@click.option("--stop", "do_stop", is_flag=True, help="Ask it to exit (calls in flight finish).")
@click.option("--idle", type=float, default=None,
              help="Exit after this many seconds without a call (default 900, or "
                   "$PREIMAGE_SERVE_IDLE).")
@click.option("--json", "as_json", is_flag=True, help="Machine-readable --status.")
def serve(show_status: bool, do_stop: bool, idle: float | None, as_json: bool) -> None:
    """The resident decision service the hook talks to (started on demand by the hook).

    One service runs per user: it answers every PREIMAGE_HOME, config and session,
    each call in a process of its own with that call's settings; it listens on a Unix
    socket in the runtime directory and exits when idle.
    --status and --stop also cover the warm process that runs commands such as
    capture and restore without a Python start-up each (PREIMAGE_SERVICE=off: neither).
    """
    from preimage.services import decision_service as svc
    from preimage.services import warm, wire

    try:
        address = wire.Address.from_env()
    except OSError as exc:
        click.echo(f"preimage: no runtime directory for the service: {exc}", err=True)
        sys.exit(2)
    warm_address = wire.Address(address.key, address.folder, kind="cli")
    if show_status:
        doc = svc.status(address)
        warm_doc = warm.ask(warm_address, "status")
        if as_json:  # null without a decision service, as before the warm process existed
            click.echo(json.dumps(doc if doc is None else {**doc, "warm": warm_doc}, indent=2))
        elif doc is None:
            click.echo(f"no decision service is running for this user "
                       f"(socket {address.socket}); the next hook call starts one")
        else:
            started = time.strftime("%Y-%m-%d %H:%M:%S", time.localtime(doc["started"]))
            click.echo(f"decision service pid {doc['pid']}, up since {started} "
                       f"({doc['uptime']:.0f} s), idle for {doc['idle_for']:.0f} s "
                       f"(exits after {doc['idle_exit']:.0f} s)")
            click.echo(f"  socket:    {doc['socket']}")
            click.echo(f"  calls:     {sum(doc['served'].values())} answered, "
                       f"{doc['in_flight']} in flight")
            click.echo(f"  log:       {doc['log']}")
            click.echo(f"  serves:    uid {doc['uid']}, any PREIMAGE_HOME, config or session")
        if as_json:
            pass
        elif warm_doc is None:
            click.echo("no warm process is running for this user; the next command "
                       "starts one")
        else:
            click.echo(f"warm process pid {warm_doc['pid']}: {warm_doc['served']} commands "
                       f"served, {warm_doc['running']} running (socket {warm_doc['socket']})")
        sys.exit(0 if doc else 1)
    if do_stop:
        pid = svc.stop(address)
        click.echo(f"stopped the decision service (pid {pid})" if pid
                   else "no decision service was running for this user")
        warm_doc = warm.ask(warm_address, "stop")
        click.echo(f"stopped the warm process (pid {warm_doc['pid']}; commands running in it "
                   "finish)" if warm_doc else "no warm process was running for this user")
        return
    service = svc.DecisionService(address, idle=idle if idle is not None else svc.idle_seconds())
    try:
        code = service.serve_forever()
    except Exception as exc:
        click.echo(f"preimage: the decision service could not start: {exc} "
                   f"(see {service.log_path})", err=True)
        sys.exit(2)
    if code == 3:
        click.echo(f"a decision service already runs for this user ({address.socket})",
                   err=True)
    sys.exit(code)
