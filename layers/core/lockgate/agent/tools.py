"""Moved to ``lockgate.actions.tools`` (import from ``lockgate`` instead); kept for one release."""

from lockgate.actions.tools import *  # noqa: F403
