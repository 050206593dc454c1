"""The process environment the local stack's functions see: moto's endpoint and dummy credentials,
nothing that could reach a real account, and each change undone exactly when the stack stops."""

from __future__ import annotations

import contextlib
import logging
import os
import re
import threading
from collections.abc import Iterable, Iterator

from lockgate_infra.local.intrinsics import REGION
from lockgate_infra.local.resources import LOCAL_PREFIX

log = logging.getLogger("lockgate_infra.local")
DUMMY_CREDENTIALS = {"AWS_ACCESS_KEY_ID": "testing", "AWS_SECRET_ACCESS_KEY": "testing"}
# Anything that could send a handler's boto3 calls somewhere other than moto.
_ESCAPES = ("AWS_PROFILE", "AWS_DEFAULT_PROFILE", "AWS_SESSION_TOKEN", "AWS_SECURITY_TOKEN",
            "AWS_IGNORE_CONFIGURED_ENDPOINT_URLS")  # fmt: skip
# An HTTP API's deployed base URL as the plan resolves it (resources.local_api_url).
# A secret given as ``env:NAME`` (in lockgate.toml or a function's environment) is read at each use.
_ENV_REFERENCE = re.compile(r"\benv:([A-Za-z_][A-Za-z0-9_]*)")
_LOCAL_API_URL = re.compile(
    rf"https://{re.escape(LOCAL_PREFIX)}[a-z0-9-]+\.execute-api\.{re.escape(REGION)}\.amazonaws\.com"
)


class EnvironmentPatch:
    """Changes to ``os.environ`` that can be undone exactly, in whatever order stacks stop.

    Patches nest: one process may hold several stacks at once (a test module's shared stack and a
    test's own). A patch restored while a later one still holds a key leaves the key alone and
    hands its saved value to that later patch, which restores it when it stops; restoring the
    earlier value at once would leave the later stack's functions pointing at nothing.
    """

    def __init__(self) -> None:
        self._saved: dict[str, str | None] = {}

    def set(self, key: str, value: str) -> None:
        """Set ``key``, remembering what it was."""
        self._remember(key)
        os.environ[key] = value

    def unset(self, key: str) -> None:
        """Remove ``key``, remembering what it was."""
        self._remember(key)
        os.environ.pop(key, None)

    def _remember(self, key: str) -> None:
        with _ACTIVE_LOCK:
            self._saved.setdefault(key, os.environ.get(key))
            if self not in _ACTIVE:
                _ACTIVE.append(self)

    @contextlib.contextmanager
    def hidden(self, keys: Iterable[str]) -> Iterator[None]:
        """``keys`` absent from ``os.environ`` inside the block, back as they were after it."""
        held = {key: os.environ.pop(key) for key in list(keys) if key in os.environ}
        try:
            yield
        finally:
            os.environ.update(held)

    def restore(self) -> None:
        """Every changed key back as it was, unless a later patch still holds it (see above)."""
        with _ACTIVE_LOCK:
            later = _ACTIVE[_ACTIVE.index(self) + 1 :] if self in _ACTIVE else []
            for key, value in self._saved.items():
                holder = next((patch for patch in later if key in patch._saved), None)
                if holder is not None:
                    holder._saved[key] = value
                elif value is None:
                    os.environ.pop(key, None)
                else:
                    os.environ[key] = value
            self._saved.clear()
            if self in _ACTIVE:
                _ACTIVE.remove(self)


_ACTIVE: list[EnvironmentPatch] = []  # the patches holding keys now, oldest first
_ACTIVE_LOCK = threading.Lock()


def leave_real_aws(env: EnvironmentPatch) -> None:
    """No profile, session token or per-service endpoint from the user's environment stays in play.

    Before moto starts too: importing its CloudFormation support makes a boto3 Session, which
    fails on an ``AWS_PROFILE`` this machine's config lacks.
    """
    for key in [*_ESCAPES, *(k for k in os.environ if k.startswith("AWS_ENDPOINT_URL_"))]:
        env.unset(key)


def point_at_moto(env: EnvironmentPatch, endpoint_url: str, config_path: str) -> None:
    """Every boto3 client the functions make goes to moto, with dummy credentials, in us-east-1."""
    leave_real_aws(env)
    for key, value in {
        "AWS_ENDPOINT_URL": endpoint_url,
        **DUMMY_CREDENTIALS,
        "AWS_DEFAULT_REGION": "us-east-1",
        "AWS_REGION": "us-east-1",
        "LOCKGATE_CONFIG": config_path,
    }.items():
        env.set(key, value)


def names_local_api(value: str) -> bool:
    """Whether an environment value holds an HTTP API's deployed-style URL."""
    return _LOCAL_API_URL.search(value) is not None


def localise_api_url(value: str, gateway_url: str) -> str:
    """The value with every HTTP API URL replaced by the running gateway's."""
    return _LOCAL_API_URL.sub(gateway_url, value)


def read_at_each_use(texts: Iterable[str]) -> set[str]:
    """The variables ``texts`` name as ``env:NAME`` secrets: read when used, not once at cold start."""
    return {name for text in texts for name in _ENV_REFERENCE.findall(text)}


def warn_of_clash(texts: Iterable[str], key: str, first: str, second: str) -> None:
    """Two functions give ``key`` different values, and this process has one environment.

    It matters only for a variable read while a function runs: each function reads its settings
    once, when it loads (its cold start, as on Lambda), under its own values. The ones read at
    each use are the ``env:NAME`` secrets (named in ``texts``: the config and the environments);
    for those both functions now see the last value.
    """
    if key not in read_at_each_use(texts):
        return
    log.warning("%s and %s set the secret %s differently; they share this process's environment, "
                "so both now use %s's value: give them one value to try this locally",
                first, second, key, second)  # fmt: skip
