"""The pin file: each allowed tool's definition as a person reviewed it, committed with the workflow.

One JSON file per server, keys sorted and indented, so a re-pin reads as a diff in review::

    {"format": "lockgate-mcp-pins/1", "server": "tickets", "url": "http://…/mcp",
     "protocol_version": "2026-07-28", "sdk": "mcp 2.3.0", "pinned_at": "2026-12-03T07:00:00Z",
     "tools": {"close_ticket": {"fingerprint": "sha256:…", "definition": {…}}}}

Loading checks every definition against its fingerprint, so a hand-edited or damaged file is
refused with what is wrong, instead of offering the model something nobody reviewed.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from lockgate.clock import Clock
from lockgate.errors import ConfigError
from lockgate.mcp.definitions import DefinitionRejected, Listing, ToolDefinition
from lockgate.mcp.untrusted import one_line

FORMAT = "lockgate-mcp-pins/1"


class PinFileInvalid(ConfigError):
    """A pin file that is not JSON, not in the pin format, or whose definitions fail their fingerprints."""


class CannotPin(ConfigError):
    """An allowed tool the server does not list, or lists with a definition Lockgate cannot hold."""


@dataclass(frozen=True)
class Drift:
    """How a pinned tool's live definition differs from its pin; no changes means it may be offered."""

    server: str
    tool: str
    changes: tuple[str, ...]

    @property
    def changed(self) -> bool:
        """True when the live definition is not the pinned one."""
        return bool(self.changes)

    def message(self) -> str:
        """One line naming the server, the tool and what changed."""
        if not self.changes:
            return f"the tool {self.tool!r} on MCP server {self.server!r} is as pinned"
        return (
            f"the tool {self.tool!r} on MCP server {self.server!r} changed since it was pinned: "
            f"{'; '.join(self.changes)}"
        )


@dataclass(frozen=True)
class PinFile:
    """A server's pinned tools, as written by ``dumps`` and read back by ``loads``."""

    server: str
    url: str
    protocol_version: str
    sdk: str
    pinned_at: str
    """When the definitions were read, ISO 8601 in UTC."""
    tools: Mapping[str, ToolDefinition]

    @classmethod
    def from_listing(cls, listing: Listing, allowed: Iterable[str], clock: Clock) -> PinFile:
        """Pin the ``allowed`` tools as listed now; CannotPin names each one missing or unusable."""
        problems, tools = [], {}
        for name in sorted(set(allowed)):
            if name in listing.tools:
                tools[name] = listing.tools[name]
            elif name in listing.rejected:
                problems.append(f"{name}: {listing.rejected[name]}")
            else:
                problems.append(f"{name}: not listed by the server")
        if problems:
            raise CannotPin(f"cannot pin MCP server {listing.server!r}: {'; '.join(problems)}")
        when = datetime.fromtimestamp(clock.now(), UTC).strftime("%Y-%m-%dT%H:%M:%SZ")
        return cls(listing.server, listing.url, listing.protocol_version, listing.sdk_version, when, tools)

    def dumps(self) -> str:
        """The file's text: sorted keys, two-space indents, a newline at the end."""
        document = {
            "format": FORMAT,
            "server": self.server,
            "url": self.url,
            "protocol_version": self.protocol_version,
            "sdk": self.sdk,
            "pinned_at": self.pinned_at,
            "tools": {
                name: {"fingerprint": tool.fingerprint, "definition": tool.to_wire()}
                for name, tool in self.tools.items()
            },
        }
        return json.dumps(document, indent=2, sort_keys=True, ensure_ascii=False) + "\n"

    @classmethod
    def loads(cls, text: str, *, source: str = "the pin file") -> PinFile:
        """Read a pin file; PinFileInvalid says what is wrong and where."""
        try:
            raw = json.loads(text)
        except ValueError as exc:
            raise PinFileInvalid(f"{source} is not JSON: {exc}") from None
        try:
            document = _Document.model_validate(raw)
        except ValidationError as exc:
            raise PinFileInvalid(f"{source} is not a pin file: {_problems(exc)}") from None
        tools = {name: _checked(name, pinned, source) for name, pinned in sorted(document.tools.items())}
        return cls(
            document.server, document.url, document.protocol_version, document.sdk, document.pinned_at, tools
        )

    def drift(self, listing: Listing) -> tuple[Drift, ...]:
        """Each pinned tool against the live listing, by name."""
        return tuple(
            Drift(self.server, name, drift_of(listing, name, pinned))
            for name, pinned in sorted(self.tools.items())
        )


def pin_command(server: str, workflow: str) -> str:
    """What to run to (re)pin a server's tools, as an error message tells it."""
    flag = f" --workflow {workflow}" if workflow else ""
    return f"run `lockgate mcp pin {server}{flag}`, review the file it writes and commit it"


def drift_of(listing: Listing, name: str, pinned: ToolDefinition) -> tuple[str, ...]:
    """What differs between the live listing's ``name`` and its pin: changed, unusable or gone."""
    live = listing.tools.get(name)
    if live is not None:
        return live.changes_from(pinned)
    if name in listing.rejected:
        return (f"its definition can no longer be used: {listing.rejected[name]}",)
    return ("the server no longer lists it",)


def _checked(name: str, pinned: _Pinned, source: str) -> ToolDefinition:
    where = f"{source}, tool {one_line(name, 128)!r}"
    try:
        definition = ToolDefinition.from_wire(pinned.definition)
    except DefinitionRejected as exc:
        raise PinFileInvalid(f"{where}: {exc}") from None
    if definition.name != name:
        raise PinFileInvalid(f"{where}: the definition is named {one_line(definition.name, 128)!r}")
    if definition.to_wire() != pinned.definition or definition.fingerprint != pinned.fingerprint:
        raise PinFileInvalid(
            f"{where}: the definition does not match its fingerprint (edited by hand or damaged): "
            "pin it again"
        )
    return definition


def _problems(exc: ValidationError) -> str:
    shown = [
        f"{'.'.join(str(part) for part in error['loc']) or 'the document'}: {error['msg']}"
        for error in exc.errors()[:5]
    ]
    more = len(exc.errors()) - len(shown)
    return "; ".join(shown) + (f" (and {more} more)" if more > 0 else "")


class _Pinned(BaseModel):
    model_config = ConfigDict(extra="forbid", strict=True)

    fingerprint: str = Field(pattern=r"^sha256:[0-9a-f]{64}$")
    definition: dict[str, Any]


class _Document(BaseModel):
    model_config = ConfigDict(extra="forbid", strict=True)

    format: Literal["lockgate-mcp-pins/1"]
    server: str = Field(min_length=1)
    url: str
    protocol_version: str
    sdk: str
    pinned_at: str
    tools: dict[str, _Pinned]
