"""``Conversation``: a Messages API request as an offline model written by hand reads it.

When a ``ScriptedModel``'s rules cannot say what your model should do (a reply composed from
several results, a choice among orders), write the model as a function of the request: read it
through a ``Conversation``, and answer with ``ask`` (tool calls) or ``say`` (the final text). The
example shop's offline models are written so (``workflows/shop/offline/``).
"""

from __future__ import annotations

from collections.abc import Sequence

from lockgate_infra.stub import conversation
from lockgate_infra.stub.conversation import JSON, ToolCall
from lockgate_infra.stub.extraction import is_extraction, source_text
from lockgate_infra.stub.replies import Reply, not_written_for
from lockgate_infra.stub.screening import as_read, is_screen, screen_reply


class Conversation:
    """A request to the model, read: the task's prompt, the tools offered, the calls made and their results.

    Build one per request (``Conversation(request)``); it only reads. A model answers each request
    with a ``Reply``: the next tool calls (``ask``) or its last words (``say``).
    """

    def __init__(self, request: JSON) -> None:
        self.request = request
        """The request as the local Messages API stub received it (model, system, tools, messages)."""

    @property
    def prompt(self) -> str:
        """The text of the first user message: what the task's ``start`` put in ``Start.prompt``."""
        return conversation.first_user_text(self.request)

    @property
    def tools(self) -> dict[str, JSON]:
        """The tools offered, by name, in the order offered: each its definition (``input_schema`` ...)."""
        return conversation.offered_tools(self.request)

    def calls(self) -> list[ToolCall]:
        """Every tool call made so far, in order, each with its result once one came back."""
        return conversation.calls(self.request)

    def find(self, tool: str, arguments: JSON) -> ToolCall | None:
        """The call made with exactly this tool and these arguments, or None."""
        return conversation.find_call(self.request, tool, arguments)

    def argument(self, tool: str, wanted: str, *hints: str) -> str:
        """The name the tool's schema gives an argument: ``wanted``, else the first containing a hint."""
        return conversation.argument(self.tools.get(tool), wanted, *hints)

    def contents(self) -> list[str]:
        """What the model reads that it did not write: each user text and tool result, in order, as sent."""
        pieces = []
        for message in conversation.messages(self.request):
            if message.get("role") != "user":
                continue
            for block in conversation.blocks(message):
                if block.get("type") == "text":
                    pieces.append(str(block.get("text", "")))
                elif block.get("type") == "tool_result":
                    pieces.append(conversation.result_text(block))
        return pieces

    @staticmethod
    def as_read(text: str) -> str:
        """``text`` as a model reads it: Unicode tag characters as the ASCII they spell, zero-width
        characters dropped (Lockgate strips both from untrusted results; a raw request may hold them)."""
        return as_read(text)

    def screened(self) -> Reply | None:
        """The answer to a content screen (a task's ``screen_model``: CLEAN or INJECTION, by the same
        rules as every offline model), or None when this request is not one."""
        return screen_reply(self.request) if is_screen(self.request) else None

    def intake_source(self) -> str | None:
        """The text an intake's structured-output request asks to read, or None when it is not one."""
        return source_text(self.request) if is_extraction(self.request) else None

    def ask(self, note: str, wanted: Sequence[tuple[str, JSON]]) -> Reply:
        """A turn that says ``note`` and makes every ``(tool, arguments)`` call together."""
        uses = [conversation.tool_use(self.request, n, tool, args) for n, (tool, args) in enumerate(wanted)]
        return Reply([conversation.text(note), *uses], "tool_use")

    def say(self, text: str) -> Reply:
        """The model's last words for the run (stop reason ``end_turn``)."""
        return Reply([conversation.text(text)], "end_turn")

    def not_written_for(self, model: str, written_for: str) -> Reply:
        """What a model asked to run a task it was not written for answers (a warning log names both)."""
        return not_written_for(model, written_for, sorted(self.tools))
