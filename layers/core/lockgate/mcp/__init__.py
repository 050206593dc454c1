"""Tools from MCP servers: definitions as pinned, the pin file, and a client whose failures are typed.

- ``servers``: a configured server (``ServerSettings``, ``Credential``).
- ``client``: ``McpClient.list_tools`` and ``McpClient.call_tool``, synchronous.
- ``failures``: what can go wrong, as types, each saying whether the server may have acted.
- ``definitions``, ``changes``: a tool's definition in canonical form, its fingerprint, and what
  changed between a pinned and a live one.
- ``pins``: the pin file committed with a workflow, and drift per tool.
- ``results``: a tool's answer as untrusted JSON-able content, cut to a size limit.
- ``session``, ``transport``, ``outcomes``: the SDK connection, the HTTP layer under it, and the
  mapping of a failed operation to a failure type.

Only ``session`` and ``transport`` import the ``mcp`` SDK or ``httpx2``, and only ``client``
imports them, when an operation runs: importing anything else here never loads the SDK.
"""
