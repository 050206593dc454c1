"""Per-function settings, read from the environment once, at cold start, by the handler.

One class per function, in a module per function, listing every variable that function reads;
the composition roots in ``lockgate.runtime`` take these, never ``os.environ``. Frozen dataclasses
rather than pydantic models, and names that load on first use: the receiver's cold start budget
(≤10% over a bare boto3 handler) can afford neither pydantic nor the other functions' classes.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from lockgate.exports import lazy_exports

# Public name → the module that defines it.
_PUBLIC = {
    "ApprovalSettings": "lockgate.settings.approvals",
    "JobsSettings": "lockgate.settings.jobs",
    "ReceiverSettings": "lockgate.settings.receiver",
    "WorkerSettings": "lockgate.settings.worker",
}
__all__ = ["ApprovalSettings", "JobsSettings", "ReceiverSettings", "WorkerSettings"]

if TYPE_CHECKING:
    from lockgate.settings.approvals import ApprovalSettings
    from lockgate.settings.jobs import JobsSettings
    from lockgate.settings.receiver import ReceiverSettings
    from lockgate.settings.worker import WorkerSettings

__getattr__ = lazy_exports(__name__, _PUBLIC)
