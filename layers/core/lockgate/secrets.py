"""Resolve secret references (``env:NAME``, ``secretsmanager:NAME``) with a short cache."""

from __future__ import annotations

import json
from collections.abc import Callable, Mapping, Sequence
from threading import Lock
from typing import Any

from lockgate.clock import Clock, SystemClock
from lockgate.errors import ConfigError, SecretUnavailable

# Long enough to keep Secrets Manager off the hot path, short enough that a
# rotated webhook secret is picked up within minutes.
DEFAULT_MAX_AGE_SECONDS = 300
# A secret that is missing, empty or unusable is asked for again after this long: a secret
# created after a cold start is picked up within seconds, yet a source whose secret was never
# created costs Secrets Manager two calls a minute per container, not one per delivery.
DEFAULT_MISS_SECONDS = 30


def secret_values(value: str) -> list[str]:
    """One stored value as the secrets it holds: a JSON array of strings holds several (rotation)."""
    if value.lstrip().startswith("["):
        try:
            parsed = json.loads(value)
        except ValueError:
            return [value]
        if isinstance(parsed, list) and parsed and all(isinstance(v, str) for v in parsed):
            return list(parsed)
    return [value]


def rotation_value(values: Sequence[str]) -> str:
    """What to store for ``values``: the value itself when there is one, else a JSON array."""
    return values[0] if len(values) == 1 else json.dumps(list(values))


class SecretResolver:
    """Turns references from lockgate.toml into secret values; never logs a value."""

    def __init__(
        self,
        environ: Mapping[str, str],
        secretsmanager: Callable[[], Any] | None = None,
        clock: Clock | None = None,
        max_age_seconds: float = DEFAULT_MAX_AGE_SECONDS,
        miss_seconds: float = DEFAULT_MISS_SECONDS,
    ) -> None:
        self._environ = environ
        self._secretsmanager_factory = secretsmanager
        self._client: Any = None
        self._clock = clock or SystemClock()
        self._max_age = max_age_seconds
        self._miss_seconds = miss_seconds
        self._cache: dict[str, tuple[float, str]] = {}
        self._misses: dict[str, tuple[float, ConfigError | SecretUnavailable]] = {}  # name → when, why
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
        """Every reference resolved, in order (several allow rotation, as does a JSON array value)."""
        return [secret for ref in refs for secret in secret_values(self.resolve(ref))]

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
        except (SecretUnavailable, ConfigError):
            return

    def forget(self) -> None:
        """Drop cached values (e.g. after a SnapStart restore)."""
        self._cache.clear()
        self._misses.clear()
        self._client = None

    def distrust(self, refs: Sequence[str]) -> None:
        """Treat these values as missing (they cannot verify anything): read them again after a pause."""
        now = self._clock.now()
        for ref in refs:
            kind, _, name = ref.partition(":")
            if kind == "secretsmanager" and self._cache.pop(name, None) is not None:
                self._misses[name] = (now, SecretUnavailable(f"secret {ref} is unusable"))

    def _from_secretsmanager(self, name: str) -> str:
        now = self._clock.now()
        cached = self._cache.get(name)
        if cached and now - cached[0] < self._max_age:
            return cached[1]
        missed = self._misses.get(name)
        if missed and now - missed[0] < self._miss_seconds:
            raise type(missed[1])(str(missed[1]))  # asked moments ago: don't ask again per delivery
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
                # than turn a Secrets Manager blip into 503s for every provider (retry after a pause).
                self._cache[name] = (now - self._max_age + self._miss_seconds, cached[1])
                return cached[1]
            error = SecretUnavailable(f"cannot read secret secretsmanager:{name}: {type(exc).__name__}")
            self._misses[name] = (now, error)
            raise error from exc
        value = str(response.get("SecretString") or "")
        if not value.strip():
            self._misses[name] = (now, ConfigError(f"secret secretsmanager:{name} is empty or missing"))
            return value
        self._misses.pop(name, None)
        self._cache[name] = (now, value)
        return value
