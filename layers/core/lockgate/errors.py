"""Domain errors. Callers map these to responses by type, never by message text."""

from __future__ import annotations


class LockgateError(Exception):
    """Base class for every error Lockgate raises on purpose."""


class ConfigError(LockgateError):
    """The configuration is missing, malformed or unsafe (e.g. an empty secret)."""


class SecretUnavailable(LockgateError):
    """A secret could not be read right now (e.g. Secrets Manager throttled); retry later."""


class PayloadTooLarge(LockgateError):
    """The request body is larger than the source allows."""


class UnknownSource(LockgateError):
    """No webhook source with that name is configured."""


class InvalidSignature(LockgateError):
    """The signature did not verify; the reason is for logs, never for the reply."""

    def __init__(self, reason: str) -> None:
        super().__init__(reason)
        self.reason = reason


class BadDelivery(LockgateError):
    """A verified delivery that cannot be stored or handled (no delivery id, a malformed body): set aside."""


class PermanentFailure(LockgateError):
    """Retrying cannot help (e.g. the model API rejects our key or billing): set the delivery aside."""


class StoreUnavailable(LockgateError):
    """The inbox could not be written or read; the provider should retry."""


class QueueUnavailable(LockgateError):
    """A pointer could not be sent to the queue."""


class DeliveryNotFound(LockgateError):
    """No inbox item has that key."""


class NotClaimable(LockgateError):
    """The delivery is finished, failed, or leased by another worker."""


class LeaseLost(LockgateError):
    """This worker no longer owns the delivery's lease; its result is refused."""


class StaleEvent(LockgateError):
    """A newer event for the same entity has already been applied."""


class Deferred(LockgateError):
    """The delivery should be retried later, after ``delay_seconds``."""

    def __init__(self, reason: str, delay_seconds: int) -> None:
        super().__init__(reason)
        self.delay_seconds = delay_seconds
