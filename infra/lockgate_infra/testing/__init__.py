"""Testing your workflow: a scripted model for your tasks and your workflow on an embedded stack.

Everything a workflow author needs, from one place::

    from lockgate_infra.testing import ScriptedModel, TestStack, call, when

- ``ScriptedModel``, ``when`` and ``call``: an offline model that answers your task with calls to your tools.
- ``Conversation``, ``Reply`` and ``ToolCall``: for an offline model written by hand, where rules
  cannot say it (the example shop's).
- ``TestStack``: your workflows on the embedded stack in this process, with that model.
- ``RecordingApi``: an outside HTTP API with side effects, played on loopback, each call recorded
  by its idempotency key (``RecordedCall``).
- The pytest plugin (installed with Lockgate, no import needed): the fixtures ``lockgate_model``
  (override it to give your model), ``lockgate_environment`` (override it to point your adapters
  at stand-ins) and ``lockgate_stack`` (a started ``TestStack`` per test).

Each of them is in the API reference (docs/reference/api.md, "Testing your workflow").
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

_PUBLIC = {
    "Call": "lockgate_infra.stub.scripted",
    "Conversation": "lockgate_infra.stub.reading",
    "LedgerView": "lockgate_infra.testing.ledger",
    "RecordedCall": "lockgate_infra.testing.recording",
    "RecordingApi": "lockgate_infra.testing.recording",
    "Reply": "lockgate_infra.stub.replies",
    "Rule": "lockgate_infra.stub.scripted",
    "ScriptError": "lockgate_infra.stub.scripted",
    "ScriptedModel": "lockgate_infra.stub.scripted",
    "Sent": "lockgate_infra.testing.deliveries",
    "TestStack": "lockgate_infra.testing.stack",
    "TestStackError": "lockgate_infra.testing.deliveries",
    "ToolCall": "lockgate_infra.stub.conversation",
    "call": "lockgate_infra.stub.scripted",
    "when": "lockgate_infra.stub.scripted",
}
__all__ = [
    "Call",
    "Conversation",
    "LedgerView",
    "RecordedCall",
    "RecordingApi",
    "Reply",
    "Rule",
    "ScriptError",
    "ScriptedModel",
    "Sent",
    "TestStack",
    "TestStackError",
    "ToolCall",
    "call",
    "when",
]

if TYPE_CHECKING:
    from lockgate_infra.stub.conversation import ToolCall
    from lockgate_infra.stub.reading import Conversation
    from lockgate_infra.stub.replies import Reply
    from lockgate_infra.stub.scripted import Call, Rule, ScriptedModel, ScriptError, call, when
    from lockgate_infra.testing.deliveries import Sent, TestStackError
    from lockgate_infra.testing.ledger import LedgerView
    from lockgate_infra.testing.recording import RecordedCall, RecordingApi
    from lockgate_infra.testing.stack import TestStack


def __getattr__(name: str) -> Any:
    # Loaded on first use, and without importing lockgate here: pytest imports this package (for
    # its plugin) before coverage starts, and the library must be imported after that to be measured.
    if name in _PUBLIC:
        return getattr(importlib.import_module(_PUBLIC[name]), name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
