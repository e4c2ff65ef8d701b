"""``preimage mcp-proxy``: an MCP server in front of another, backing up before each tool call.

The proxy speaks MCP on both sides with the official Python SDK (``pip install
'preimage[mcp]'``).  Upstream it starts the real server (stdio: ``preimage mcp-proxy
--name pg -- npx some-server …``) or connects to it (streamable HTTP: ``--url``);
downstream it serves the harness over stdio, or over streamable HTTP on a loopback
port (``--listen``).  Tool lists, resources and prompts pass through unchanged.  Each
``tools/call`` becomes ``ToolCall.mcp(NAME, tool, arguments)`` for
:meth:`BackupLayer.before`; the call is forwarded only after the backup is taken (or,
when the backup failed, as ``on_failure`` says: ``allow`` forwards and says so,
``deny``/``ask`` return a tool error and forward nothing).  The result goes back with
one more text item naming the backup, so the model can say how to undo it, and
:meth:`BackupLayer.after` records how the call ended.

``NAME`` is the server's name in preimage's settings (``mcp.NAME.kind/target`` in
``config.yaml``) — it tells the layer what the server talks to.  Works with any
harness that speaks MCP, including ones without hooks.
"""

from __future__ import annotations

import base64
import concurrent.futures
import os
import sys
import time
from collections.abc import Awaitable, Callable
from contextlib import AsyncExitStack
from typing import TYPE_CHECKING, Any, TypeVar

from preimage.layer.call import ToolCall
from preimage.layer.config import LayerConfig
from preimage.layer.deciding.completion import Completion, ToolResult
from preimage.layer.harnesses.hook import log

T = TypeVar("T")

if TYPE_CHECKING:
    from mcp import ClientSession
    from mcp.server.lowlevel import Server

    from preimage.layer.deciding.backup_layer import BackupLayer
    from preimage.layer.decision import Decision


def _require_sdk() -> None:
    try:
        import mcp  # noqa: F401
    except ImportError as exc:
        from preimage.interface.errors import UsageError

        raise UsageError("the MCP proxy needs the MCP SDK: pip install 'preimage[mcp]'") from exc


def build_server(upstream: ClientSession, name: str, layer: BackupLayer,
                 capabilities: Any) -> Server[Any, Any]:
    """A low-level MCP server that forwards to ``upstream``, protecting each tool call."""
    import anyio
    from mcp import types
    from mcp.server.lowlevel import Server

    server: Server[Any, Any] = Server(f"preimage-{name}")
    session = f"mcp-proxy-{name}-{os.getpid()}-{int(time.time())}"
    # The layer's store (SQLite) belongs to the thread that opened it: every layer call runs
    # on this one thread, off the event loop (a capture may take seconds).
    own = concurrent.futures.ThreadPoolExecutor(max_workers=1, thread_name_prefix="layer")

    async def on_layer(fn: Callable[..., T], *args: Any) -> T:
        return await anyio.to_thread.run_sync(lambda: own.submit(fn, *args).result())

    @server.list_tools()  # type: ignore[no-untyped-call, untyped-decorator]
    async def list_tools() -> list[types.Tool]:
        return [with_note_field(t) for t in (await upstream.list_tools()).tools]

    @server.call_tool(validate_input=False)  # type: ignore[untyped-decorator]
    async def call_tool(tool: str, arguments: dict[str, Any]) -> types.CallToolResult:
        # One session per proxy process (one upstream server): what a call left for the
        # next (the folder emails-mcp selected) is this server's, not another proxy's.
        call = ToolCall.mcp(name, tool, arguments, cwd=os.getcwd(), session_id=session)
        call.harness = "mcp-proxy"
        decision = await on_layer(layer.before, call)
        log({"event": "decision", "harness": "mcp-proxy", "tool": call.tool,
             **{k: v for k, v in decision.to_dict().items() if k != "findings"}})
        if decision.error and layer.config.on_failure != "allow":
            message = f"preimage: this call is NOT backed up and was not run — {decision.error}"
            await on_layer(layer.after, call, ToolResult("error", error=message), decision)
            return types.CallToolResult(content=[types.TextContent(type="text", text=message)],
                                        isError=True)
        started = time.perf_counter()
        try:
            result = await upstream.call_tool(tool, arguments)
        except Exception as exc:
            done = await on_layer(layer.after, call, ToolResult("error", error=str(exc)),
                                  decision)
            log({"event": "completed", "harness": "mcp-proxy", **done.to_dict()})
            raise
        done = await on_layer(layer.after, call, ToolResult(
            "error" if result.isError else "ok",
            duration_ms=round((time.perf_counter() - started) * 1000, 1),
            # what the answer says of the state it left (the page a browser is on)
            output="\n".join(c.text for c in result.content if isinstance(c, types.TextContent))),
            decision)
        log({"event": "completed", "harness": "mcp-proxy", **done.to_dict()})
        noted: types.CallToolResult = with_note(result, proxy_note(decision, done))
        return noted

    if getattr(capabilities, "resources", None):
        @server.list_resources()  # type: ignore[no-untyped-call, untyped-decorator]
        async def list_resources() -> list[types.Resource]:
            return (await upstream.list_resources()).resources

        @server.read_resource()  # type: ignore[no-untyped-call, untyped-decorator]
        async def read_resource(uri: Any) -> Any:
            from mcp.server.lowlevel.helper_types import ReadResourceContents

            got = await upstream.read_resource(uri)
            out = []
            for c in got.contents:
                text = getattr(c, "text", None)
                blob = getattr(c, "blob", None)
                body: str | bytes = text if isinstance(text, str) else (
                    base64.b64decode(blob) if isinstance(blob, str) else b"")
                out.append(ReadResourceContents(content=body, mime_type=c.mimeType))
            return out

    if getattr(capabilities, "prompts", None):
        @server.list_prompts()  # type: ignore[no-untyped-call, untyped-decorator]
        async def list_prompts() -> list[types.Prompt]:
            return (await upstream.list_prompts()).prompts

        @server.get_prompt()  # type: ignore[no-untyped-call, untyped-decorator]
        async def get_prompt(prompt: str, arguments: dict[str, str] | None) -> Any:
            return await upstream.get_prompt(prompt, arguments)

    return server


def proxy_note(decision: Decision, done: Completion) -> str:
    """What the model is told after the call: the backup (or why there is none), then the
    decision's notes (what was not captured, what was widened, why)."""
    parts = [done.note] if done.note else []
    parts += [n for n in decision.notes if n not in parts]
    return " ".join(parts)


NOTE_FIELD = "preimage"


def with_note_field(tool: Any) -> Any:
    """``tool`` with the note's field declared in its output schema (when it has one), so
    a result carrying the note in ``structuredContent`` still validates against it."""
    schema = getattr(tool, "outputSchema", None)
    if not isinstance(schema, dict) or schema.get("type") != "object":
        return tool
    properties = {**(schema.get("properties") or {}),
                  NOTE_FIELD: {"type": "string", "description": "preimage's backup note"}}
    return tool.model_copy(update={"outputSchema": {**schema, "properties": properties}})


def with_note(result: Any, note: str) -> Any:
    """``result`` with ``note`` where the model reads it.

    A result with ``structuredContent`` is shown to the model by some clients (Claude
    Code) as that object alone, its ``content`` items dropped: the note then goes into
    the object too, under ``preimage``, as well as into ``content`` for the others.
    """
    from mcp import types

    if not note:
        return result
    update: dict[str, Any] = {
        "content": [*result.content, types.TextContent(type="text", text=note)]}
    structured = getattr(result, "structuredContent", None)
    if isinstance(structured, dict):
        update["structuredContent"] = {**structured, NOTE_FIELD: note}
    return result.model_copy(update=update)


async def _upstream(stack: AsyncExitStack, command: list[str] | None,
                    url: str | None) -> tuple[ClientSession, Any]:
    from mcp import ClientSession, StdioServerParameters
    from mcp.client.stdio import stdio_client

    if command:
        params = StdioServerParameters(command=command[0], args=command[1:],
                                       env=dict(os.environ), cwd=os.getcwd())
        read, write = await stack.enter_async_context(stdio_client(params))
    else:
        assert url is not None
        read, write, _ = await stack.enter_async_context(http_client(url))
    session = await stack.enter_async_context(ClientSession(read, write))
    init = await session.initialize()
    return session, init.capabilities


def http_client(url: str) -> Any:
    """The SDK's streamable-HTTP client transport for ``url`` (its 1.2x and 1.3x names)."""
    from mcp.client import streamable_http

    connect = getattr(streamable_http, "streamable_http_client", None)
    return (connect or streamable_http.streamablehttp_client)(url)


async def serve(name: str, config: LayerConfig, *, command: list[str] | None = None,
                url: str | None = None, listen: tuple[str, int] | None = None,
                ready: Callable[[str], Awaitable[None] | None] | None = None) -> None:
    """Run the proxy until the harness (stdio) or the process (HTTP) ends."""
    _require_sdk()
    from preimage.layer.deciding.backup_layer import BackupLayer
    from preimage.layer.mcp_servers import remember_launch

    # What the server talks to is in how it starts: its arguments, this process's
    # environment (which it inherits) and the folder it runs in.
    remember_launch(name, command, url, cwd=os.getcwd())
    layer = BackupLayer(config=config)
    async with AsyncExitStack() as stack:
        upstream, capabilities = await _upstream(stack, command, url)
        server = build_server(upstream, name, layer, capabilities)
        if listen is None:
            from mcp.server.stdio import stdio_server

            read, write = await stack.enter_async_context(stdio_server())
            await server.run(read, write, server.create_initialization_options())
            return
        await _serve_http(server, listen, ready)


async def _serve_http(server: Server[Any, Any], listen: tuple[str, int],
                      ready: Callable[[str], Awaitable[None] | None] | None) -> None:
    import uvicorn
    from mcp.server.streamable_http_manager import StreamableHTTPSessionManager
    from starlette.applications import Starlette
    from starlette.routing import Mount

    manager = StreamableHTTPSessionManager(app=server, stateless=True)

    async def handle(scope: Any, receive: Any, send: Any) -> None:
        await manager.handle_request(scope, receive, send)

    app = Starlette(routes=[Mount("/mcp", app=handle)])
    host, port = listen
    uv = uvicorn.Server(uvicorn.Config(app, host=host, port=port, log_level="warning",
                                       lifespan="off"))
    async with manager.run():
        import anyio

        async with anyio.create_task_group() as tg:
            tg.start_soon(uv.serve)
            while not uv.started:
                await anyio.sleep(0.05)
            bound = uv.servers[0].sockets[0].getsockname()[1] if uv.servers else port
            where = f"http://{host}:{bound}/mcp"
            print(f"preimage mcp-proxy: serving {where}", file=sys.stderr, flush=True)
            if ready is not None:
                maybe = ready(where)
                if maybe is not None:
                    await maybe
