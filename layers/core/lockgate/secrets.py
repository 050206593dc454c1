"""Resolve secret references (``env:NAME``, ``secretsmanager:NAME``) with a short cache."""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from threading import Lock
from typing import Any

from lockgate.clock import Clock, SystemClock
from lockgate.errors import ConfigError, SecretUnavailable

# Long enough to keep Secrets Manager off the hot path, short enough that a
# rotated webhook secret is picked up within minutes.
DEFAULT_MAX_AGE_SECONDS = 300


class SecretResolver:
    """Turns references from lockgate.toml into secret values; never logs a value."""

    def __init__(
        self,
        environ: Mapping[str, str],
        secretsmanager: Callable[[], Any] | None = None,
        clock: Clock | None = None,
        max_age_seconds: float = DEFAULT_MAX_AGE_SECONDS,
    ) -> None:
        self._environ = environ
        self._secretsmanager_factory = secretsmanager
        self._client: Any = None
        self._clock = clock or SystemClock()
        self._max_age = max_age_seconds
        self._cache: dict[str, tuple[float, str]] = {}
        self._client_lock = Lock()

    def resolve(self, ref: str) -> str:
        """The secret's value; ConfigError if it is missing or empty."""
        kind, _, name = ref.partition(":")
        if kind == "env":
            value = self._environ.get(name, "")
        elif kind == "secretsmanager":
            value = self._from_secretsmanager(name)
        else:
            raise ConfigError(f"unknown secret reference kind {kind!r} (use env: or secretsmanager:)")
        if not value.strip():
            # An empty HMAC key lets anyone forge a signature: refuse to run.
            raise ConfigError(f"secret {ref} is empty or missing")
        return value

    def resolve_all(self, refs: Sequence[str]) -> list[str]:
        """Every reference resolved, in order (several allow rotation)."""
        return [self.resolve(ref) for ref in refs]

    def prefetch(self, refs: Sequence[str]) -> None:
        """Read every Secrets Manager reference at once, so a cold start pays one round trip, not N."""
        names = sorted({ref.partition(":")[2] for ref in refs if ref.startswith("secretsmanager:")})
        if len(names) < 2:
            return
        from concurrent.futures import ThreadPoolExecutor  # only cold starts need it

        with ThreadPoolExecutor(max_workers=min(8, len(names))) as pool:
            # Errors surface on the resolve() that follows, with the secret's name.
            list(pool.map(self._prefetch_one, names))

    def _prefetch_one(self, name: str) -> None:
        try:
            self._from_secretsmanager(name)
        except SecretUnavailable:
            return

    def forget(self) -> None:
        """Drop cached values (e.g. after a SnapStart restore)."""
        self._cache.clear()
        self._client = None

    def _from_secretsmanager(self, name: str) -> str:
        now = self._clock.now()
        cached = self._cache.get(name)
        if cached and now - cached[0] < self._max_age:
            return cached[1]
        if self._secretsmanager_factory is None:
            raise ConfigError(f"secret secretsmanager:{name} needs a Secrets Manager client")
        with self._client_lock:
            if self._client is None:
                self._client = self._secretsmanager_factory()
        try:
            response = self._client.get_secret_value(SecretId=name)
        except Exception as exc:  # noqa: BLE001 - whatever the cause, we cannot verify with a fresh value
            if cached:
                # The refresh failed, but this value verified deliveries minutes ago: keep it rather
                # than turn a Secrets Manager blip into 503s for every provider.
                return cached[1]
            raise SecretUnavailable(
                f"cannot read secret secretsmanager:{name}: {type(exc).__name__}"
            ) from exc
        value = str(response.get("SecretString") or "")
        self._cache[name] = (now, value)
        return value
