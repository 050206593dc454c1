"""Per-source fail-closed: a source whose Secrets Manager secret is missing or unusable answers 503 alone."""

from __future__ import annotations

import json
from typing import Any

import pytest

from lockgate.config import parse_config
from lockgate.inbox.receipt import Receiver
from lockgate.secrets import DEFAULT_MISS_SECONDS
from lockgate.webhooks.signing import sign
from tests.support import Harness, RecordingLog

CONFIG = {
    "sources": {
        "github": {"scheme": "github", "secrets": ["secretsmanager:lockgate/webhooks/github"]},
        "partner": {"scheme": "hmac", "secrets": ["secretsmanager:lockgate/webhooks/partner"],
                    "header": "X-Partner-Signature", "id_header": "X-Partner-Delivery"},
        "helpdesk": {"scheme": "standard", "secrets": ["secretsmanager:lockgate/webhooks/helpdesk"]},
    }
}  # fmt: skip


class Counted:
    """Counts GetSecretValue calls on a moto client (to show a miss is not asked for per delivery)."""

    def __init__(self, client: Any) -> None:
        self.client, self.calls = client, 0
        client.meta.events.register("before-call.secrets-manager.GetSecretValue", self._count)

    def _count(self, **_: Any) -> None:
        self.calls += 1


@pytest.fixture
def sm(harness: Harness) -> Counted:
    return Counted(harness.client("secretsmanager"))


def receiver(harness: Harness, log: RecordingLog | None = None) -> Receiver:
    return harness.receiver_on_secrets_manager(parse_config(CONFIG), log or RecordingLog())


def post(harness: Harness, built: Receiver, source: str, secret: str, delivery_id: str) -> int:
    body = json.dumps({"id": delivery_id, "type": "push"}).encode()
    cfg = harness.config.sources[source]
    headers = sign(cfg, secret, body, int(harness.clock.now()), delivery_id=delivery_id, event_type="push")
    return harness.post(source, body, headers, receiver=built).status


def stored(harness: Harness) -> set[str]:
    return {item["pk"]["S"] for item in harness.aws.inbox_items()}


def test_a_missing_secret_fails_its_source_closed_and_is_picked_up_once_created(
    harness: Harness, sm: Counted
) -> None:
    # Given the partner's secret exists and GitHub's was never created
    sm.client.create_secret(Name="lockgate/webhooks/partner", SecretString="partner-key")
    log = RecordingLog()
    built = receiver(harness, log)
    # When each provider sends a delivery
    github = post(harness, built, "github", "github-key", "g-1")
    partner = post(harness, built, "partner", "partner-key", "p-1")
    # Then GitHub's gets 503 (so GitHub retries), nothing of it is stored, the miss is counted and
    # logged by source and reference; the partner's is accepted and stored
    assert (github, partner) == (503, 200)
    assert stored(harness) == {"partner#p-1"}
    assert harness.metrics.totals["SecretUnavailable"] == 1
    (line,) = log.at("error")
    assert line["msg"] == "secret unavailable, answering 503"
    assert (line["source"], line["secrets"]) == ("github", ["secretsmanager:lockgate/webhooks/github"])
    # When the secret is created after the cold start, retries within the miss pause still get 503
    # without asking Secrets Manager again
    sm.client.create_secret(Name="lockgate/webhooks/github", SecretString="github-key")
    calls = sm.calls
    harness.clock.advance(DEFAULT_MISS_SECONDS - 1)
    assert post(harness, built, "github", "github-key", "g-1") == 503
    assert sm.calls == calls
    # and once the pause is over, the same receiver reads it and GitHub's retry is stored
    harness.clock.advance(2)
    assert post(harness, built, "github", "github-key", "g-1") == 200
    assert stored(harness) == {"partner#p-1", "github#g-1"}
    assert harness.metrics.totals["SecretUnavailable"] == 2


@pytest.mark.parametrize("value", ["  ", "not base64 at all!", " whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw"])
def test_an_empty_or_unusable_secret_fails_closed(harness: Harness, sm: Counted, value: str) -> None:
    # Given the helpdesk's Standard Webhooks secret holds something no delivery should verify with
    sm.client.create_secret(Name="lockgate/webhooks/helpdesk", SecretString=value)
    sm.client.create_secret(Name="lockgate/webhooks/partner", SecretString="partner-key")
    built = receiver(harness)
    good = "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw"
    # Then its deliveries get 503 and are not stored, while the partner's go through
    assert post(harness, built, "helpdesk", good, "msg_1") == 503
    assert post(harness, built, "partner", "partner-key", "p-1") == 200
    assert stored(harness) == {"partner#p-1"}
    # When the operator stores a good value, it is used after the miss pause (not the 5-minute cache)
    sm.client.put_secret_value(SecretId="lockgate/webhooks/helpdesk", SecretString=good)
    harness.clock.advance(DEFAULT_MISS_SECONDS + 1)
    assert post(harness, built, "helpdesk", good, "msg_1") == 200
    assert "helpdesk#msg_1" in stored(harness)


def test_a_rotating_secret_verifies_with_both_values(harness: Harness, sm: Counted) -> None:
    # Given the partner's secret holds the current and the next value (as `secrets rotate-in` stores)
    sm.client.create_secret(Name="lockgate/webhooks/partner", SecretString=json.dumps(["old-key", "new-key"]))
    built = receiver(harness)
    # Then deliveries signed with either verify, and one signed with neither is refused
    assert post(harness, built, "partner", "old-key", "p-old") == 200
    assert post(harness, built, "partner", "new-key", "p-new") == 200
    assert post(harness, built, "partner", "other-key", "p-forged") == 401
    assert stored(harness) == {"partner#p-old", "partner#p-new"}
