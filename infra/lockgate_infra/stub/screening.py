"""The stand-in's answer to a content screen (``lockgate.agent.screen``): INJECTION or CLEAN, by rule.

Recognised by the screen's system prompt and by offering no tools. Like a careful small model it
answers INJECTION when the content talks to an AI assistant or tries to make it act: a written
tool call (``name({...})``), "ignore ... instructions", "reply to ... instead", "include this
link:", "you are now ...", "system prompt". The content is read as a model reads it: Unicode tag
characters as the ASCII they spell, zero-width characters as nothing (lockgate strips both before
a screen, so on the real path they never arrive). Everything else is CLEAN.
"""

from __future__ import annotations

import re
from typing import Any

from lockgate.agent.screen import SCREEN_PROMPT
from lockgate_infra.stub.conversation import first_user_text, offered_tools, text
from lockgate_infra.stub.replies import Reply

_SIGNS = re.compile(
    r"(?i)\b[a-z_][a-z0-9_]*\s*\(\s*\{"  # a written tool call
    r"|\bignore\b[^.\n]{0,40}\binstructions?\b"
    r"|\breply to\s+\S+@\S+\s+instead\b"
    r"|\binclude this link:"
    r"|\byou are now\b"
    r"|\bsystem prompt\b"
    r"|\b(?:ai|language model|assistant)\s*[:,]\s"
)
_TAGS = re.compile("[\U000e0000-\U000e007f]")
_ZERO_WIDTH = re.compile("[\u200b-\u200d\u2060\ufeff\u00ad]")


def is_screen(request: dict[str, Any]) -> bool:
    """A screen request: the screen's own system prompt, no tools."""
    system = request.get("system")
    if isinstance(system, list):
        system = " ".join(str(b.get("text", "")) for b in system if isinstance(b, dict))
    return not offered_tools(request) and str(system or "").startswith(SCREEN_PROMPT[:40])


def as_read(content: str) -> str:
    """The content as a model reads it: tag characters as their ASCII, zero-width characters dropped."""
    spelled = _TAGS.sub(lambda m: chr(ord(m.group(0)) - 0xE0000), content)
    return _ZERO_WIDTH.sub("", spelled)


def screen_reply(request: dict[str, Any]) -> Reply:
    """One word, as the screen asks."""
    flagged = _SIGNS.search(as_read(first_user_text(request)))
    return Reply([text("INJECTION" if flagged else "CLEAN")], "end_turn")
