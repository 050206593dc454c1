"""A structured-output request (``lockgate.agent.structured.extract``, a task's intake), recognised.

Recognised by offering no tools and asking for a schema: in ``output_config`` (structured outputs)
or, for models without them, in the system prompt. The source text sits between two identical
``<<<SOURCE …>>>`` lines; what to answer is each offline model's own (``ScriptedModel``'s
``extract``, the shop's ``workflows/shop/offline/intake.py``).
"""

from __future__ import annotations

import re
from typing import Any

from lockgate_infra.stub.conversation import first_user_text, offered_tools

SCHEMA_INSTRUCTION = "Reply with one JSON object that matches this JSON schema"
MARKER = re.compile(r"^(<<<SOURCE [0-9a-f]+>>>)$", re.MULTILINE)


def is_extraction(request: dict[str, Any]) -> bool:
    """An ``extract`` request: no tools, and a schema in ``output_config`` or in the system prompt."""
    if offered_tools(request):
        return False
    return "output_config" in request or SCHEMA_INSTRUCTION in _system(request)


def source_text(request: dict[str, Any]) -> str:
    """The text between the two marker lines of the first user message."""
    prompt = first_user_text(request)
    found = MARKER.search(prompt)
    if found is None:
        return ""
    end = prompt.find("\n" + found.group(1), found.end())
    return prompt[found.end() : end if end >= 0 else len(prompt)].strip()


def _system(request: dict[str, Any]) -> str:
    system = request.get("system")
    if isinstance(system, str):
        return system
    if isinstance(system, list):
        return "\n".join(str(b.get("text", "")) for b in system if isinstance(b, dict))
    return ""
