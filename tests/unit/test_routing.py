"""Routing picks the most specific handler; settings and secrets fail clearly."""

from __future__ import annotations

import pytest

from lockgate.clock import FixedClock
from lockgate.errors import ConfigError, SecretUnavailable
from lockgate.inbox.routing import Router, no_task
from lockgate.secrets import SecretResolver, rotation_value, secret_values
from lockgate.settings import ReceiverSettings, WorkerSettings


def handler_named(name: str):  # type: ignore[no-untyped-def]
    def handler(event, context):  # type: ignore[no-untyped-def]
        return name

    return handler


@pytest.mark.parametrize(
    ("source", "event_type", "expected"),
    [
        ("github", "issues.opened", "exact"),
        ("github", "issues.closed", "prefix"),
        ("github", "push", "any"),
        ("stripe", "charge.refunded", "default"),
    ],
)
def test_most_specific_route_wins(source: str, event_type: str, expected: str) -> None:
    router = Router(default=handler_named("default"))
    router.add("github", "*", handler_named("any"))
    router.add("github", "issues.*", handler_named("prefix"))
    router.add("github", "issues.opened", handler_named("exact"))
    assert router.route(source, event_type)(None, None) == expected  # type: ignore[arg-type]


def test_duplicate_route_is_a_mistake() -> None:
    router = Router()
    router.add("github", "push", no_task)
    with pytest.raises(ValueError, match="already registered"):
        router.add("github", "push", no_task)


def test_settings_name_what_is_missing() -> None:
    with pytest.raises(ConfigError, match="INBOX_QUEUE_URL"):
        ReceiverSettings.from_env({"INBOX_TABLE": "t", "BODY_BUCKET": "b"})
    env = {
        "INBOX_TABLE": "t",
        "STATE_TABLE": "s",
        "INBOX_QUEUE_URL": "q",
        "INBOX_DLQ_URL": "d",
        "BODY_BUCKET": "b",
        "WORKER_TIMEOUT_SECONDS": "abc",
    }
    with pytest.raises(ConfigError, match="WORKER_TIMEOUT_SECONDS"):
        WorkerSettings.from_env(env)
    assert WorkerSettings.from_env({**env, "WORKER_TIMEOUT_SECONDS": "120"}).timeout_seconds == 120


class FakeSecretsManager:
    def __init__(self, values: dict[str, str], fail: bool = False) -> None:
        self.values, self.fail, self.calls = values, fail, 0

    def get_secret_value(self, SecretId: str) -> dict[str, str]:  # noqa: N803 - boto3's name
        self.calls += 1
        if self.fail:
            raise RuntimeError("throttled")
        return {"SecretString": self.values[SecretId]}


def test_secrets_manager_values_are_cached_then_refreshed() -> None:
    clock = FixedClock()
    sm = FakeSecretsManager({"lockgate/webhooks/github": "s3cret"})
    resolver = SecretResolver({}, secretsmanager=lambda: sm, clock=clock, max_age_seconds=300)
    assert resolver.resolve("secretsmanager:lockgate/webhooks/github") == "s3cret"
    assert resolver.resolve("secretsmanager:lockgate/webhooks/github") == "s3cret"
    assert sm.calls == 1
    clock.advance(301)
    sm.values["lockgate/webhooks/github"] = "rotated"
    assert resolver.resolve("secretsmanager:lockgate/webhooks/github") == "rotated"


def test_unreadable_secret_fails_closed() -> None:
    resolver = SecretResolver({}, secretsmanager=lambda: FakeSecretsManager({}, fail=True))
    with pytest.raises(SecretUnavailable):
        resolver.resolve("secretsmanager:x")
    with pytest.raises(ConfigError, match="needs a Secrets Manager client"):
        SecretResolver({}).resolve("secretsmanager:x")
    with pytest.raises(ConfigError, match="empty or missing"):
        SecretResolver({"A": ""}).resolve("env:A")


def test_a_failed_refresh_keeps_the_last_good_value() -> None:
    # Given a secret read once, then Secrets Manager failing when the cache is due a refresh
    clock = FixedClock()
    sm = FakeSecretsManager({"s": "good"})
    resolver = SecretResolver({}, secretsmanager=lambda: sm, clock=clock)
    assert resolver.resolve("secretsmanager:s") == "good"
    sm.fail = True
    clock.advance(301)
    # Then deliveries keep verifying with the last good value instead of failing with 503
    assert resolver.resolve("secretsmanager:s") == "good"
    # and a secret never read still fails closed
    with pytest.raises(SecretUnavailable):
        resolver.resolve("secretsmanager:other")


def test_prefetch_reads_every_secret_once_up_front() -> None:
    sm = FakeSecretsManager({"a": "1", "b": "2", "c": "3"})
    resolver = SecretResolver({}, secretsmanager=lambda: sm)
    resolver.prefetch(["secretsmanager:a", "secretsmanager:b", "secretsmanager:c", "env:X"])
    assert sm.calls == 3
    assert resolver.resolve_all(["secretsmanager:a", "secretsmanager:c"]) == ["1", "3"]
    assert sm.calls == 3


def test_a_missing_secret_is_asked_for_again_only_after_the_miss_pause() -> None:
    # Given a secret that does not exist yet
    clock = FixedClock()
    sm = FakeSecretsManager({})
    resolver = SecretResolver({}, secretsmanager=lambda: sm, clock=clock, miss_seconds=30)
    with pytest.raises(SecretUnavailable):
        resolver.resolve("secretsmanager:s")
    # When it is created, a read within the pause fails from memory, without a call
    sm.values["s"] = "now-here"
    with pytest.raises(SecretUnavailable):
        resolver.resolve("secretsmanager:s")
    assert sm.calls == 1
    # Then after the pause it is read
    clock.advance(31)
    assert resolver.resolve("secretsmanager:s") == "now-here"


@pytest.mark.parametrize(
    ("stored", "values"),
    [
        ("plain", ["plain"]),
        ('["old", "new"]', ["old", "new"]),
        ("[not json", ["[not json"]),
        ("[]", ["[]"]),
        ("[1, 2]", ["[1, 2]"]),
    ],
)
def test_a_json_array_of_strings_holds_several_secrets(stored: str, values: list[str]) -> None:
    assert secret_values(stored) == values
    if len(values) > 1:
        assert secret_values(rotation_value(values)) == values
