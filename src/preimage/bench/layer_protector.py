"""preimage through its backup layer: the layer decides, the benchmark obeys.

The call goes to :meth:`preimage.layer.BackupLayer.before` exactly as a
harness hook would send it (tool name, input, cwd, the sandbox's ``HOME``),
with a fresh configuration: mode ``full``, the agent's cwd as workspace, the
system's MCP servers, no model (so tokens are 0 unless a rule tier could not
decide — then the workspace tier answers).  The benchmark runs the call the
layer returns (its rewrite, when it rewrote), and restores by the backup id
of the decision.
"""

from __future__ import annotations

from typing import Any, ClassVar

from preimage.bench.preimage_protector import PreimageBackup
from preimage.bench.protector import Protection, RunContext
from preimage.bench.scenario import CallSpec


class LayerProtector(PreimageBackup):
    """``BackupLayer.before(call)``, then ``preimage.restore(decision.backup_id)``."""

    name: ClassVar[str] = "preimage"
    label: ClassVar[str] = "preimage (backup layer)"

    @staticmethod
    def _layer_and_call(ctx: RunContext, spec: CallSpec) -> tuple[Any, Any]:
        from preimage.layer import BackupLayer, LayerConfig, McpServer, Mode, ToolCall

        env = dict(ctx.sandbox.env)
        settings = dict(ctx.system.layer_settings(ctx.sandbox))
        servers = dict(settings.pop("mcp", {}))
        if not spec.is_shell:
            # The scenario's MCP server (``supabase``, ``email``) is configured the way a
            # user configures theirs: mcp.<name>.target in preimage's settings.
            called, _tool = spec.mcp
            if called not in servers and len(servers) == 1:
                servers = {called: next(iter(servers.values()))}
        mcp = {name: McpServer.model_validate(s) for name, s in servers.items()}
        config = LayerConfig(mode=Mode.FULL, workspace=str(ctx.sandbox.cwd), mcp=mcp, **settings)
        layer = BackupLayer(store=ctx.store, config=config, env=env)
        call = ToolCall(
            spec.tool, dict(spec.input), str(ctx.sandbox.cwd),
            session_id=f"bench-{ctx.sandbox.variables['run']}", env=env, harness="claude-code",
        )
        return layer, call

    def observe(self, ctx: RunContext, call: CallSpec) -> None:
        """An earlier call of the session goes through the layer too (it remembers pages)."""
        layer, tool_call = self._layer_and_call(ctx, call)
        layer.before(tool_call)

    def before(self, ctx: RunContext) -> Protection:
        """Ask the layer; record its decision (tier, rules, targets, tokens, rewrite)."""
        layer, call = self._layer_and_call(ctx, ctx.call)
        decision = layer.before(call)
        protection = Protection(
            handle=(layer, call, decision),
            backup_id=decision.backup_id,
            targets=list(decision.targets),
            model_tokens=int(decision.model_tokens),
            tier=decision.tier.value if decision.tier is not None else "pass",
            rules=list(decision.rules),
            notes=[*decision.notes, *([f"layer error: {decision.error}"] if decision.error else [])],
        )
        if decision.updated_input is not None:
            protection.call = CallSpec(tool=ctx.call.tool, input=dict(decision.updated_input))
            protection.notes.append(f"rewritten to: {decision.updated_input.get('command', '')}")
        if decision.backup_id is not None:
            # A trash rewrite records its backup as the call runs: nothing is stored yet.
            from preimage import BackupNotFoundError

            try:
                protection.stored_bytes = ctx.store.catalog.get(decision.backup_id).stored_bytes
            except BackupNotFoundError:
                protection.stored_bytes = 0
        return protection
