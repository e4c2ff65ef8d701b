"""``preimage hook HARNESS …``: the process a harness runs before every tool call.

It imports only the standard library on its way to an answer: it reads the
payload, hands it to the resident decision service (``preimage serve``) over
its Unix socket, and prints the service's answer.  Every answer is still
made by :func:`preimage.layer.harnesses.hook.handle`; the client only carries it.

When no service answers in time the client decides in-process through that
same function (so protection is never skipped), says so on stderr and in the
hook log, and starts a service in the background for the next call.  When
the service accepted the call but died before answering (a crash
mid-capture), the answer says the call is NOT backed up — the backup it had
begun stays ``open`` in the catalog — and ``--on-failure ask|deny`` apply.
"""

from __future__ import annotations

import os
import sys
import time

from preimage.services import lean_json as json
from preimage.services import wire

TYPE_CHECKING = False  # typing is not imported: this is the hook's path
if TYPE_CHECKING:
    from typing import Any

CONNECT_SECONDS = 0.5     # connecting to a live service is immediate; this only bounds a wedged one
ACCEPT_SECONDS = 2.0      # the service acknowledges a request as soon as it has read it
ANSWER_MARGIN = 30.0      # beyond the deadline the service announced for its answer
RESTART_BACKOFF = 10.0    # seconds before another client may start a service again


class ServiceUnavailable(Exception):
    """No service took the call: it is safe to decide in-process."""


class ServiceLost(Exception):
    """The service took the call and then failed to answer: a backup may be half-made."""


def _log(event: dict[str, Any]) -> None:
    """Append to the hook log (the same file :func:`preimage.layer.harnesses.hook.log` writes)."""
    try:
        path = _log_path()
        os.makedirs(os.path.dirname(path), exist_ok=True)
        fd = os.open(path, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o600)  # private, like hook.log
        with os.fdopen(fd, "a") as fh:
            fh.write(json.dumps({"time": time.time(), **event}) + "\n")
    except OSError:
        pass


def _call_env() -> dict[str, str]:
    """Everything the call's decision depends on: the whole environment.

    The service answers in a process of its own that takes it as its environment —
    the store, config and tool settings, the variables the command line expands in,
    ``CLAUDE_PROJECT_DIR`` — and ends with the call, credentials included.
    """
    return dict(os.environ)


def ask_service(address: wire.Address, harness: str, args: list[str],
                payload: bytes) -> tuple[str, str, int]:
    """Have the service answer one hook call: ``(stdout, stderr, exit_code)``.

    Raises :class:`ServiceUnavailable` when nobody took the call and
    :class:`ServiceLost` when the service took it and then went away.
    """
    try:
        sock = wire.connect(address, CONNECT_SECONDS)
    except OSError as exc:
        raise ServiceUnavailable(f"no service at {address.socket} ({exc.strerror or exc})") from exc
    with sock:
        reader = wire.LineReader(sock)
        try:
            wire.send(sock, {"op": "hook", "harness": harness, "args": args,
                             "cwd": os.getcwd(), "env": _call_env()}, payload)
            sock.settimeout(ACCEPT_SECONDS)
            first = reader.line()
        except (OSError, ValueError) as exc:
            why = _refusal(reader) or f"the service did not take the call ({exc})"
            raise ServiceUnavailable(why) from exc
        if first is None or first.get("event") != "accepted":
            why = (first or {}).get("error") or "it closed the connection"
            raise ServiceUnavailable(f"the service refused the call: {why}")
        deadline = float(first.get("deadline") or 45.0) + ANSWER_MARGIN
        sock.settimeout(deadline)
        try:
            doc = reader.line(limit=wire.MAX_BODY)
        except TimeoutError as exc:
            raise ServiceLost(f"the decision service did not answer within {deadline:.0f} s") from exc
        except (OSError, ValueError) as exc:
            raise ServiceLost(f"the decision service failed mid-call ({exc})") from exc
        if doc is None:
            raise ServiceLost("the decision service stopped mid-call (it crashed or was killed)")
        if doc.get("event") != "answer":
            raise ServiceLost(f"the decision service failed: {doc.get('error') or doc}")
        return str(doc.get("stdout", "")), str(doc.get("stderr", "")), int(doc.get("exit_code", 0))


def _refusal(reader: wire.LineReader) -> str | None:
    """The reason a service that closed on us gave (it refuses before reading a request)."""
    try:
        reader.sock.settimeout(0.2)
        doc = reader.line()
    except (OSError, ValueError):
        return None
    return f"the service refused the call: {doc['error']}" if doc and doc.get("error") else None


def start_service(address: wire.Address) -> bool:
    """Start ``preimage serve`` detached, unless a client did so moments ago."""
    return wire.start_detached(address.started, ["-m", "preimage", "serve"], RESTART_BACKOFF)


def decide_in_process(harness: str, args: list[str], text: str, why: str) -> tuple[str, str, int]:
    """The fallback: the same decision, made in this process (imports the whole layer)."""
    # pydantic looks for plugins by scanning every installed distribution's entry points on
    # its first model; the hook's models use none, and this process lives for one call.
    os.environ.setdefault("PYDANTIC_DISABLE_PLUGINS", "__all__")
    from preimage.layer.harnesses.hook import handle

    outcome = handle(harness, args, text)
    note = f"preimage: decided in-process — {why}\n"
    return outcome.stdout, outcome.stderr + note, outcome.exit_code


def lost_answer(harness: str, args: list[str], why: str) -> tuple[str, str, int]:
    """The answer when the service died holding the call: NOT backed up, with the
    configured ``--on-failure`` (imports the layer to read the settings)."""
    try:
        from preimage.layer.config import LayerConfig
        from preimage.layer.decision import Action, Decision
        from preimage.layer.harnesses.hook import _hook_options, answer

        opts = _hook_options(args)
        cfg = LayerConfig.load(on_failure=opts.on_failure, approve=opts.approve)
        doc = answer(Decision(Action.PASS, None, error=why), cfg, harness=harness)
    except Exception as exc:  # settings unreadable too: still say it plainly
        doc = {"systemMessage": f"preimage: this call is NOT backed up — {why} ({exc})"}
    return json.dumps(doc), f"preimage: {why}\n", 0


def _harness_and_options(argv: list[str]) -> tuple[str, list[str]]:
    return (argv[0], list(argv[1:])) if argv else ("claude-code", [])


_BEGIN_EVENTS = ("PreToolUse", "BeforeTool")
_END_EVENTS = ("PostToolUse", "PostToolUseFailure", "AfterTool")


# Set for the decision once the session's supervisor has moved to this call's backup: the
# layer then leaves the call's file changes to it (read in layer/deciding/backup_layer.py).
OBSERVED_CALL = "PREIMAGE_OBSERVED_CALL"


def mark_boundary(harness: str, text: str) -> None:
    """Under ``preimage session``: tell the supervisor a tool call begins or ends, and
    wait until it has moved to the call's backup (see :mod:`preimage.observe.session`).
    Only once it answered does the decision leave file changes to it
    (``PREIMAGE_OBSERVED_CALL``); a supervisor that cannot be reached is logged and the
    call is decided and backed up as without a session."""
    os.environ.pop(OBSERVED_CALL, None)
    path = os.environ.get("PREIMAGE_SUPERVISOR")
    if not path:
        return
    try:
        payload = json.loads(text)
    except ValueError:
        return
    if not isinstance(payload, dict):
        return
    event = payload.get("hook_event_name")
    call = payload.get("tool_use_id") or payload.get("call_id")
    if event not in (*_BEGIN_EVENTS, *_END_EVENTS) or not call:
        return
    tool_input = payload.get("tool_input")
    record = {"tool": payload.get("tool_name"), "harness": harness, "tool_use_id": call,
              "input": tool_input if isinstance(tool_input, dict) else {}}
    if isinstance(tool_input, dict) and isinstance(tool_input.get("command"), str):
        record["command"] = tool_input["command"]
    mark = {"event": "begin" if event in _BEGIN_EVENTS else "end", "call": str(call),
            "record": record}
    try:
        with wire.unix_socket() as sock:
            sock.settimeout(ANSWER_MARGIN)
            sock.connect(path)
            sock.sendall((json.dumps(mark) + "\n").encode())
            said = sock.recv(16)
    except OSError as exc:
        _log({"event": "boundary", "error": str(exc), "call": call})
        return
    if said == b"ok\n" and mark["event"] == "begin":
        os.environ[OBSERVED_CALL] = str(call)


#: Harnesses whose post-call payload names the call (``session_id``, ``tool_use_id``), so
#: the pre-call note's file name can be known here.
_NAMED_CALLS = frozenset({"claude-code", "codex", "qwen"})
#: Harnesses whose calls have no id (Gemini CLI): the note's name ends in a digest of the
#: mapped tool and input, so here only "no note of this session at all" can be known.
_DIGEST_CALLS = frozenset({"gemini"})


def _note_name(harness: str, session: object, call: str) -> str:
    raw = f"{harness}-{session if isinstance(session, str) and session else 'nosession'}-{call}"
    return "".join(c if c.isalnum() or c in "-_." else "_" for c in raw)[:200]


def nothing_after(harness: str, text: str) -> dict[str, Any] | None:
    """A post-call event that has nothing to do — no note from the pre-call hook (no backup
    was taken and none failed), not an MCP call (whose answer may name the page it is on):
    what to log for it.  ``None`` for anything else, which goes the whole way.

    The note's name is :func:`preimage.layer.deciding.completion.call_key`'s (a test holds
    the two equal); for a harness without call ids the event is answered alone only when
    the session has no note at all.  Anything this cannot read goes the whole way, so an
    unusual payload costs time, never a post-call step."""
    digest = harness in _DIGEST_CALLS
    if not (digest or harness in _NAMED_CALLS) or os.environ.get("PREIMAGE_SUPERVISOR"):
        return None
    try:
        payload = json.loads(text)
    except ValueError:
        return None
    if not isinstance(payload, dict) or payload.get("hook_event_name") not in _END_EVENTS:
        return None
    tool, session, call = (payload.get(k) for k in ("tool_name", "session_id", "tool_use_id"))
    if not isinstance(tool, str) or "mcp" in tool.lower():
        return None
    if digest:
        if "tool_use_id" in payload or "mcp_context" in payload:
            return None
        prefix = _note_name(harness, session, "")
        if len(prefix) > 160:    # the digest would not fit in the name: cannot tell
            return None
    elif not isinstance(call, str) or not call:
        return None
    try:
        folder = os.path.join(os.path.dirname(_log_path()), "pending")
        if digest:
            try:
                with os.scandir(folder) as notes:
                    # ".<name>.<pid>.tmp" is a note being written
                    if any(n.name.lstrip(".").startswith(prefix) for n in notes):
                        return None
            except FileNotFoundError:
                pass
        elif os.path.lexists(os.path.join(folder, _note_name(harness, session, str(call)) + ".json")):
            return None
    except OSError:
        return None
    return {"event": "completed", "harness": harness, "tool": tool, "tool_use_id": call,
            "session_id": session, "backup_id": None, "path": "nothing after"}


def _log_path() -> str:
    """The hook log's path (:func:`preimage.layer.config.log_path`'s rule)."""
    return os.environ.get("PREIMAGE_LOG") or os.path.join(wire.log_dir(), "hook.log")


# Set by the compiled client (hook_client.c) when it hands a call to this one: ``unavailable
# WHY`` (no service took the call), ``lost WHY`` (the service took it and did not answer),
# ``python WHY`` (a path only this client takes).  Read once and removed, so the call's own
# environment and the processes it starts never carry it.
COMPILED_SAID = "PREIMAGE_HOOK_FALLBACK"
COMPILED_SOCKET = "PREIMAGE_HOOK_SOCKET"   # the socket the compiled client asked


def run(argv: list[str], stdin: bytes) -> tuple[str, str, int]:
    """Answer one hook call: ``argv`` is ``[HARNESS, OPTION…]``."""
    harness, args = _harness_and_options(argv)
    said, _, said_why = os.environ.pop(COMPILED_SAID, "").partition(" ")
    tried = os.environ.pop(COMPILED_SOCKET, "")
    if said:
        _log({"event": "path", "path": "compiled client handed over", "said": said,
              "why": said_why})
    text = stdin.decode("utf-8", "replace")
    done = nothing_after(harness, text)
    if done is not None:   # a call that took no backup: nothing to record, nothing to say
        _log(done)
        return "{}", "", 0
    mark_boundary(harness, text)
    if wire.service_off(os.environ):
        _log({"event": "path", "path": "in-process", "why": "PREIMAGE_SERVICE is off"})
        return decide_in_process(harness, args, text, "PREIMAGE_SERVICE is off")
    try:
        address = wire.Address.from_env()
    except OSError as exc:
        why = f"no runtime directory for the decision service ({exc})"
        _log({"event": "path", "path": "in-process", "why": why})
        return decide_in_process(harness, args, text, why)
    if said == "unavailable" and tried and tried != address.socket:
        # A client built for another installation (a new interpreter, say) looked in the
        # wrong place: ask the service here rather than decide every call in-process.
        _log({"event": "path", "path": "compiled client stale", "why": f"it asked {tried}, "
              f"the service is at {address.socket}; run `preimage install --user` again"})
        said = ""
    try:
        if said == "unavailable":   # the compiled client found no service: never ask twice
            raise ServiceUnavailable(said_why)
        if said == "lost":          # it did, and the service took the call: never ask twice
            raise ServiceLost(said_why)
        return ask_service(address, harness, args, stdin)
    except ServiceUnavailable as exc:
        started = start_service(address)
        why = f"the decision service was not reachable: {exc}" + (
            "; starting it for the next call" if started else "")
        _log({"event": "path", "path": "in-process", "why": why})
        return decide_in_process(harness, args, text, why)
    except ServiceLost as exc:
        why = str(exc)
        _log({"event": "path", "path": "lost", "why": why})
        return lost_answer(harness, args, why)


def main(argv: list[str] | None = None) -> None:
    """Entry point: read stdin, answer, exit without waiting for stray threads."""
    argv = sys.argv[2:] if argv is None else argv
    if argv and argv[0] in ("-h", "--help"):
        sys.stdout.write("usage: preimage hook HARNESS [--mode M] [--policy P] [--workspace DIR]"
                         " [--approve] [--on-failure allow|ask|deny] [--timeout S]\n"
                         "Reads a tool call on stdin and prints the hook's JSON answer.\n")
        sys.exit(0)
    try:
        stdin = sys.stdin.buffer.read()
    except (OSError, ValueError):
        stdin = b""
    try:
        out, err, code = run(argv, stdin)
    except Exception as exc:  # the harness must always get an answer, and --on-failure holds
        why = f"the hook failed, nothing backed up — {exc}"
        out, err, code = lost_answer(*_harness_and_options(argv), why)
    sys.stdout.write(out + "\n")
    sys.stderr.write(err)
    sys.stdout.flush()
    sys.stderr.flush()
    os._exit(code)  # a capture thread that overran its deadline must not hold the harness

