"""An MCP server's tools as Lockgate tools: ``setup.mcp("tickets").tools("get_ticket", "close_ticket")``.

Each tool is built from two reviewed things, never from what the server says at run time: its
definition as pinned (``lockgate mcp pin``: the name, description and input schema the model is
offered) and its table in lockgate.toml (its risk, the summary a reviewer reads, its target, the
arguments a reviewer may edit, its business identity, how an unknown outcome is settled). From
there it is an ordinary ``Tool``: the same guard, approvals and operation ledger as a Python tool.

The model calls it ``<server>__<tool>``, which is also its name in ``[approvals.tools.NAME]``, in
the ledger, traces, metrics and logs. Every result is untrusted content: reading one taints the run.
Each call reads the credential through the secret cache, checks the live definition against the
pin before anything is sent, and passes the ledger's key on (a header, or an argument).
"""

from __future__ import annotations

import re
import threading
from collections.abc import Callable, Mapping, Sequence
from typing import TYPE_CHECKING, Any

from lockgate.actions.facts import Fact, RunFacts
from lockgate.actions.mcp_args import McpArgs, args_model, joined, summary_of, value_of
from lockgate.actions.mcp_calls import called, reconcile_with
from lockgate.actions.tools import Policy, Risk, Tool, ToolContext, ToolError
from lockgate.config.mcp import McpServerConfig, McpToolConfig
from lockgate.errors import ConfigError, SecretUnavailable
from lockgate.mcp.definitions import ToolDefinition
from lockgate.mcp.pins import PinFile, pin_command
from lockgate.mcp.servers import Credential, ServerSettings
from lockgate.secrets import SecretResolver
from lockgate.telemetry import Log, Metrics

if TYPE_CHECKING:
    import ssl

    from lockgate.mcp.client import McpClient

RISKS = {"read": Risk.READ, "act": Risk.ACT, "approval": Risk.APPROVAL}
EXPOSED = re.compile(r"^[A-Za-z0-9_-]{1,64}$")  # the Messages API's tool names

FactsHook = Callable[[McpArgs, RunFacts], Sequence[Fact]]


def exposed_name(server: str, tool: str) -> str:
    """The name the model, the approval rules and the ledger know the tool by: ``server__tool``."""
    return f"{server}__{re.sub(r'[^A-Za-z0-9_-]', '_', tool)}"


class McpServer:
    """One configured server of a workflow: its pinned tools, offered with the risk the config gives."""

    def __init__(  # noqa: PLR0913 - the server, its pins, and the function's surroundings
        self,
        name: str,
        config: McpServerConfig,
        pins: PinFile,
        *,
        secrets: SecretResolver,
        log: Log,
        metrics: Metrics,
        workflow: str = "",
    ) -> None:
        self.name, self.config, self.pins, self.workflow = name, config, pins, workflow
        self._secrets, self._log, self._metrics = secrets, log, metrics
        self._where = f"lockgate.toml: [mcp.servers.{name}]"
        self._ssl: ssl.SSLContext | None = None
        self._ssl_lock = threading.Lock()
        self.settings(None)  # the url, protocol and limits are checked now, not on the first call
        if config.reconcile_tools() - set(pins.tools):
            missing = ", ".join(sorted(config.reconcile_tools() - set(pins.tools)))
            raise ConfigError(
                f"{self._where}: the reconcile tool {missing} is not pinned: {self._pin_hint()}"
            )

    def tools(
        self,
        *names: str,
        policies: Mapping[str, Sequence[Policy]] | None = None,
        facts: Mapping[str, FactsHook] | None = None,
    ) -> tuple[Tool[Any], ...]:
        """The named tools, each as its config table and pin say; a tool whose risk is ``refused`` is
        left out (the model is never offered it). ``policies`` and ``facts`` attach Python hard rules
        and a proposal's facts to a tool by its server name, e.g. ``policies={"issue_credit": (cap,)}``.

        ConfigError names a tool with no table in lockgate.toml, one not pinned, or an option for a
        tool not asked for.
        """
        if not names:
            raise ConfigError(f"{self._where}: name the tools the task may call (there is no 'all tools')")
        extra = (set(policies or {}) | set(facts or {})) - set(names)
        if extra:
            raise ConfigError(
                f"{self._where}: policies or facts for {', '.join(sorted(extra))}, not asked for"
            )
        built = []
        for name in dict.fromkeys(names):
            table = self._table(name)
            if table.risk == "refused":
                continue  # config, not an event: nothing to log (a line at each cold start says nothing new)
            built.append(
                self._tool(name, table, tuple((policies or {}).get(name, ())), (facts or {}).get(name))
            )
        return tuple(built)

    def settings(self, credential: Credential | None) -> ServerSettings:
        """The client's settings for this server, with ``credential`` (ConfigError if they are invalid)."""
        c = self.config
        try:
            return ServerSettings(
                name=self.name,
                url=c.url,
                protocol=c.protocol,
                credential=credential,
                connect_timeout=c.connect_timeout_seconds,
                read_timeout=c.read_timeout_seconds,
                max_result_bytes=c.max_result_bytes,
                max_response_bytes=max(c.max_result_bytes, ServerSettings.max_response_bytes),
            )
        except ValueError as exc:
            raise ConfigError(f"{self._where}: {exc}") from None

    def client(self) -> McpClient:
        """A client with the credential as the secret cache has it now (rotation is picked up)."""
        credential = None
        if self.config.credential:
            try:
                token = self._secrets.resolve(self.config.credential)
            except (ConfigError, SecretUnavailable) as exc:
                self._log.warning("mcp credential unavailable", extra={"server": self.name})
                raise ToolError(
                    f"MCP server {self.name}'s credential could not be read: nothing was sent"
                ) from exc
            header = self.config.auth_header
            credential = Credential.bearer(token) if header == "Authorization" else Credential(header, token)
        from lockgate.mcp.client import McpClient  # asyncio and, on its first call, the SDK: not at start

        with self._ssl_lock:
            if self._ssl is None:
                from lockgate.mcp.session import ssl_context  # loads the SDK: on the first call only

                self._ssl = ssl_context()
        return McpClient(self.settings(credential), ssl_context=self._ssl)

    def _table(self, name: str) -> McpToolConfig:
        table = self.config.tools.get(name)
        if table is None:
            raise ConfigError(
                f"{self._where}: the tool {name!r} has no [mcp.servers.{self.name}.tools.{name}] table: "
                'set its risk ("read", "act", "approval" or "refused"); there is no default'
            )
        return table

    def _definition(self, name: str) -> ToolDefinition:
        pinned = self.pins.tools.get(name)
        if pinned is None:
            raise ConfigError(f"{self._where}: the tool {name!r} is not pinned: {self._pin_hint()}")
        return pinned

    def _pin_hint(self) -> str:
        return pin_command(self.name, self.workflow)

    def _tool(
        self, name: str, table: McpToolConfig, policies: tuple[Policy, ...], facts: FactsHook | None
    ) -> Tool[Any]:
        definition = self._definition(name)
        exposed = exposed_name(self.name, name)
        where = f"{self._where}.tools.{name}"
        if not EXPOSED.match(exposed):
            raise ConfigError(
                f"{where}: {exposed!r} is longer than the 64 characters a model's tool name may be"
            )
        hidden = self._hidden_argument(definition)
        args = args_model(exposed, definition.input_schema, hidden)
        fields = set(args.offered_schema.get("properties", {}))
        for key, named in (
            ("target", (table.target,)),
            ("editable", table.editable),
            ("identity", table.identity),
        ):
            unknown = [n for n in named if n and n not in fields]
            if unknown:
                raise ConfigError(
                    f"{where}.{key}: {', '.join(unknown)} is not an argument of the pinned tool"
                )
        risk = RISKS[table.risk]
        side_effect = risk is not Risk.READ
        try:
            return Tool(
                name=exposed,
                description=definition.description or definition.title or f"{name} on MCP server {self.name}",
                args=args,
                run=self._runner(
                    name, definition, hidden, side_effect, table.safe_to_retry or not side_effect
                ),
                summary=summary_of(name, self.name, table.summary, fields, where),
                risk=risk,
                policies=policies,
                untrusted_result=True,
                needs_person_when_tainted=table.needs_person_when_tainted,
                identity=joined(exposed, table.identity) if table.identity else None,
                target=value_of(table.target) if table.target else None,
                editable=table.editable,
                facts=facts,
                reconcile=self._reconciler(table) if side_effect and table.reconcile_tool else None,
                definition=definition.fingerprint,
            )
        except ConfigError as exc:
            raise ConfigError(f"{where}: {exc}") from None

    def _hidden_argument(self, definition: ToolDefinition) -> str:
        """The argument the ledger's key goes into, if the config names one and this tool takes it."""
        argument = self.config.idempotency_argument
        return argument if argument and argument in definition.input_schema.get("properties", {}) else ""

    def _runner(
        self, name: str, definition: ToolDefinition, hidden: str, side_effect: bool, retry: bool
    ) -> Callable[[McpArgs, ToolContext], Any]:
        header = self.config.idempotency_header or None

        def run(args: McpArgs, ctx: ToolContext) -> Any:
            arguments = args.model_dump(mode="json")
            key = ctx.idempotency_key
            if hidden and key is not None:
                arguments[hidden] = key

            def send() -> Any:
                return self.client().call_tool(
                    name,
                    arguments,
                    idempotency_key=key if header else None,
                    key_header=header,
                    pinned=definition,
                )

            return called(
                send,
                server=self.name,
                tool=name,
                side_effect=side_effect,
                retry=retry,
                log=self._log,
                metrics=self._metrics,
            )

        return run

    def _reconciler(self, table: McpToolConfig) -> Callable[[str, Mapping[str, Any]], Any]:
        read_tool = table.reconcile_tool
        definition = self._definition(read_tool)

        def read(arguments: Mapping[str, Any]) -> Any:
            return self.client().call_tool(read_tool, arguments, key_header=None, pinned=definition)

        return reconcile_with(
            read, table.reconcile_argument, server=self.name, tool=read_tool, metrics=self._metrics
        )
