"""Moved to ``lockgate.inbox.routing`` (import from ``lockgate`` instead); kept for one release."""

from lockgate.inbox.routing import *  # noqa: F403
