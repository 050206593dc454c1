"""Text a person cannot see but a model reads: tag characters, zero-width and bidi controls.

Hidden instructions ride in them: Unicode tag characters (U+E0000-U+E007F) spell ASCII that no
screen shows, zero-width spaces, joiners and soft hyphens split the words a filter looks for,
and bidirectional controls reorder what a reviewer sees. Untrusted content (a tool result marked
``untrusted_result``, such as a customer's email) has them removed before any model sees it, and
a run whose content had any is marked suspicious: its side effects then wait for a person.
"""

from __future__ import annotations

import re

INVISIBLE = re.compile(
    "[\U000e0000-\U000e007f"  # tag characters
    "\u200b-\u200f"  # zero-width space, non-joiner, joiner; left-to-right and right-to-left marks
    "\u202a-\u202e\u2066-\u2069"  # bidirectional embeddings, overrides and isolates
    "\u2060-\u2064"  # word joiner and invisible operators
    "\ufeff\u00ad\u180e]"  # zero-width no-break space, soft hyphen, Mongolian vowel separator
)


def strip_invisible(text: str) -> tuple[str, int]:
    """The text without invisible characters, and how many were removed."""
    return INVISIBLE.subn("", text)
