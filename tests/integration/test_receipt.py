"""The receiver on moto: reply codes, one stored item per delivery, pointers queued, nothing half-written."""

from __future__ import annotations

import json
import threading
from dataclasses import replace
from functools import partial

import pytest

from lockgate.runtime.receiver import build_receiver
from lockgate.secrets import SecretResolver
from lockgate.settings import ReceiverSettings
from lockgate.webhooks.signing import sign
from tests.support import (
    SECRETS,
    Harness,
    RecordingLog,
    fail_calls,
    function_env,
    make_config,
    race,
)


def delivery(
    harness: Harness,
    source: str = "github",
    delivery_id: str = "d-1",
    body: bytes | None = None,
    secret: str | None = None,
    event_type: str = "push",
    at: float | None = None,
) -> tuple[bytes, dict[str, str]]:
    """A correctly signed delivery (unless a wrong secret is given)."""
    cfg = harness.config.sources[source]
    body = body if body is not None else json.dumps({"id": delivery_id, "type": event_type}).encode()
    ref = cfg.secrets[0].removeprefix("env:")
    headers = sign(
        cfg,
        secret or SECRETS[ref],
        body,
        int(at if at is not None else harness.clock.now()),
        delivery_id=delivery_id,
        event_type=event_type,
    )
    return body, headers


def test_new_delivery_is_stored_once_and_queued(harness: Harness) -> None:
    # Given a signed GitHub delivery
    body, headers = delivery(harness)
    # When it is posted
    response = harness.post("github", body, headers)
    # Then it is accepted, stored as received with its body, and one pointer is queued
    assert response.status == 200
    assert json.loads(response.body) == {"status": "accepted", "delivery": "github#d-1"}
    (item,) = harness.aws.inbox_items()
    assert item["status"]["S"] == "received"
    assert item["body"]["B"] == body
    assert item["event_type"]["S"] == "push"
    assert int(item["ttl"]["N"]) == int(harness.clock.now()) + 14 * 86_400
    messages = harness.aws.drain(harness.aws.queue_url)
    assert [json.loads(m["Body"]) for m in messages] == [{"pk": "github#d-1"}]
    assert "body" not in messages[0]["Body"]


def test_duplicate_gets_200_and_changes_nothing(harness: Harness) -> None:
    # Given a delivery already stored
    body, headers = delivery(harness)
    harness.post("github", body, headers)
    first = harness.aws.inbox_items()
    harness.aws.drain(harness.aws.queue_url)
    # When the provider retries it a few seconds later
    harness.clock.advance(5)
    body2, headers2 = delivery(harness)
    response = harness.post("github", body2, headers2)
    # Then it is answered 200 as a duplicate, the item is unchanged and nothing is queued again
    assert response.status == 200
    assert json.loads(response.body)["status"] == "duplicate"
    assert harness.aws.inbox_items() == first
    assert harness.aws.drain(harness.aws.queue_url) == []
    assert harness.metrics.totals["DeliveryDuplicate"] == 1


def test_twenty_simultaneous_copies_store_one_item(harness: Harness) -> None:
    # Given 20 copies of one delivery arriving at the same instant on 20 threads
    body, headers = delivery(harness, delivery_id="same")
    receivers = [harness.receiver() for _ in range(20)]
    # each receiver gets its own clients, as concurrent Lambdas would
    for r in receivers:
        r._inbox = type(r._inbox)(harness.aws.client("dynamodb"), harness.aws.inbox_table)
    barrier = threading.Barrier(20)
    statuses: list[int] = []

    def send(receiver: object) -> None:
        barrier.wait()
        statuses.append(harness.post("github", body, headers, receiver=receiver).status)  # type: ignore[arg-type]

    race(partial(send, r) for r in receivers)
    # Then all are answered 200, exactly one item exists and exactly one pointer was queued
    assert statuses == [200] * 20
    assert len(harness.aws.inbox_items()) == 1
    assert len(harness.aws.drain(harness.aws.queue_url)) == 1


@pytest.mark.parametrize(
    "code", ["InternalServerError", "ProvisionedThroughputExceededException", "ThrottlingException"]
)
def test_storage_unavailable_is_503_and_nothing_half_written(harness: Harness, code: str) -> None:
    # Given DynamoDB failing every write
    fail_calls(harness.client("dynamodb"), "PutItem", code)
    body, headers = delivery(harness)
    # When a delivery arrives
    response = harness.post("github", body, headers)
    # Then the provider is told to retry, and neither the table nor the queue holds anything
    assert response.status == 503
    assert harness.aws.inbox_items() == []
    assert harness.aws.drain(harness.aws.queue_url) == []


def test_queue_failure_after_store_is_recovered_by_a_later_duplicate(harness: Harness) -> None:
    # Given the queue refusing sends: the delivery is stored and acknowledged anyway
    sqs = harness.client("sqs")
    broken = {"on": True}
    fail_calls(sqs, "SendMessage", when=lambda _params: broken["on"])
    body, headers = delivery(harness)
    assert harness.post("github", body, headers).status == 200
    assert harness.aws.inbox_items()[0]["status"]["S"] == "received"
    assert harness.metrics.totals["QueueSendFailed"] == 1
    # When the queue recovers and the provider retries after the re-queue window
    broken["on"] = False
    harness.clock.advance(harness.config.inbox.requeue_after_seconds)
    body, headers = delivery(harness)
    response = harness.post("github", body, headers)
    # Then the duplicate re-queues the stranded delivery: it is not lost
    assert json.loads(response.body)["status"] == "duplicate"
    assert [json.loads(m["Body"])["pk"] for m in harness.aws.drain(harness.aws.queue_url)] == ["github#d-1"]


def test_a_store_whose_answer_was_lost_and_retried_is_new_and_queued(harness: Harness) -> None:
    # Given DynamoDB applying the put but its answer lost, so that botocore's retry of the same
    # request finds the item (measured under load: a 1 s read timeout, then a duplicate)
    db = harness.client("dynamodb")
    put = db.put_item

    def lost_answer(**params: object) -> object:
        put(**params)
        return put(**params)

    db.put_item = lost_answer
    # When the delivery is posted
    body, headers = delivery(harness)
    response = harness.post("github", body, headers)
    # Then it is accepted as new and its pointer is queued now, not left for the inbox sweep
    assert json.loads(response.body) == {"status": "accepted", "delivery": "github#d-1"}
    assert [json.loads(m["Body"])["pk"] for m in harness.aws.drain(harness.aws.queue_url)] == ["github#d-1"]
    assert harness.metrics.totals["DeliveryStored"] == 1 and "DeliveryDuplicate" not in harness.metrics.totals
    # And a real duplicate later (another receipt, its own trace) is still a duplicate
    body, headers = delivery(harness)
    assert json.loads(harness.post("github", body, headers).body)["status"] == "duplicate"


def test_reply_codes_in_order(harness: Harness) -> None:
    body, headers = delivery(harness)
    # Too large is refused before anything else, even with a bad signature and unknown source
    big = b"x" * (1_048_576 + 1)
    assert harness.post("nope", big, {}).status == 413
    assert harness.post("github", big, {"content-length": str(len(big))}).status == 413
    # A Content-Length of Unicode digits ("²" passes str.isdigit) is not a number: no crash, the checks go on
    assert harness.post("nope", body, {**headers, "content-length": "²"}).status == 404
    # Unknown source
    assert harness.post("nope", body, headers).status == 404
    # Bad signature: 401 with a generic message, the reason only in the log
    forged_body, forged = delivery(harness, secret="not-the-secret")
    reply = harness.post("github", forged_body, forged)
    assert reply.status == 401
    assert json.loads(reply.body) == {"error": "invalid signature"}
    # Verified but no delivery id
    no_id = {k: v for k, v in headers.items() if k != "x-github-delivery"}
    assert harness.post("github", body, no_id).status == 400
    # Nothing was stored by any of them
    assert harness.aws.inbox_items() == []
    assert harness.metrics.totals["SignatureRejected"] == 1


def test_base64_body_is_decoded_before_verifying(harness: Harness) -> None:
    # Given API Gateway passing a binary-looking body base64-encoded
    body, headers = delivery(harness, body=b'{"id":"b64","bytes":"\xc3\xa9"}', delivery_id="b64")
    # When it is posted base64-encoded
    response = harness.post("github", body, headers, base64=True)
    # Then the signature verifies on the decoded bytes and those exact bytes are stored
    assert response.status == 200
    assert harness.aws.inbox_items()[0]["body"]["B"] == body


def test_body_too_big_for_an_item_goes_to_s3(harness: Harness) -> None:
    # Given a partner delivery larger than an item may hold (limit 50 kB in the test config)
    payload = json.dumps({"type": "order.updated", "blob": "y" * 120_000}).encode()
    body, headers = delivery(harness, source="partner", delivery_id="big", body=payload)
    # When it is posted
    assert harness.post("partner", body, headers).status == 200
    # Then the item holds a pointer, and S3 holds the exact body
    (item,) = harness.aws.inbox_items()
    assert "body" not in item
    ref = item["body_ref"]["S"]
    bucket, _, key = ref.removeprefix("s3://").partition("/")
    assert harness.aws.client("s3").get_object(Bucket=bucket, Key=key)["Body"].read() == body


def test_slack_url_verification_is_answered_after_verifying_and_not_stored(harness: Harness) -> None:
    payload = json.dumps({"type": "url_verification", "challenge": "abc123", "token": "x"}).encode()
    body, headers = delivery(harness, source="slack", body=payload)
    response = harness.post("slack", body, headers)
    assert response.status == 200
    assert json.loads(response.body) == {"challenge": "abc123"}
    assert harness.aws.inbox_items() == []
    # and a forged challenge gets no answer
    _, forged = delivery(harness, source="slack", body=payload, secret="wrong")
    assert harness.post("slack", body, forged).status == 401


def test_rotation_accepts_old_and_new_secret(harness: Harness) -> None:
    new_body, new_headers = delivery(harness, source="helpdesk", delivery_id="msg_new")
    old_body, old_headers = delivery(
        harness, source="helpdesk", delivery_id="msg_old", secret=SECRETS["STANDARD_SECRET_OLD"]
    )
    assert harness.post("helpdesk", new_body, new_headers).status == 200
    assert harness.post("helpdesk", old_body, old_headers).status == 200
    assert {i["pk"]["S"] for i in harness.aws.inbox_items()} == {"helpdesk#msg_new", "helpdesk#msg_old"}


def test_stale_timestamp_is_rejected(harness: Harness) -> None:
    body, headers = delivery(harness, source="stripe", delivery_id="evt_1", at=harness.clock.now() - 3600)
    assert harness.post("stripe", body, headers).status == 401
    assert harness.aws.inbox_items() == []


@pytest.mark.parametrize("value", ["", "   "])
def test_an_empty_secret_fails_closed_for_its_source_only(harness: Harness, value: str) -> None:
    # Given a source whose secret resolves to nothing
    receiver = harness.receiver()
    receiver._secrets = SecretResolver({**SECRETS, "GITHUB_SECRET": value})
    receiver.check_secrets()  # the cold start goes on: one source must not take the others down
    # When a delivery signed with that empty key arrives (what a forger would send)
    body, headers = delivery(harness, secret="x")
    # Then it is refused with 503 and nothing is stored; another source still works
    assert harness.post("github", body, headers, receiver=receiver).status == 503
    assert harness.aws.inbox_items() == []
    assert harness.metrics.totals["SecretUnavailable"] == 1
    other_body, other_headers = delivery(harness, source="partner", delivery_id="p-1")
    assert harness.post("partner", other_body, other_headers, receiver=receiver).status == 200


def test_every_configured_secret_checked_at_start(harness: Harness) -> None:
    # Given every secret but the partner's
    missing = {k: v for k, v in SECRETS.items() if k != "PARTNER_SECRET"}
    log = RecordingLog()
    deps = replace(harness.deps(), secrets=SecretResolver(missing), log=log)
    receiver = build_receiver(ReceiverSettings.from_env(function_env(harness.aws)), harness.config, deps)
    # When the receiver checks its secrets at cold start, it starts, and warns about that one source
    receiver.check_secrets()
    (warning,) = log.at("warning")
    assert (warning["source"], warning["secrets"]) == ("partner", ["env:PARTNER_SECRET"])
    assert len(log.at("info")) == len(harness.config.sources) - 1


def test_config_limits_are_per_source(aws: object, clock: object) -> None:
    harness = Harness(aws=aws, config=make_config(), clock=clock)  # type: ignore[arg-type]
    # partner allows 2 MB, github the default 1 MB
    payload = json.dumps({"type": "order.updated", "blob": "z" * 1_500_000}).encode()
    body, headers = delivery(harness, source="partner", delivery_id="p-big", body=payload)
    assert harness.post("partner", body, headers).status == 200
    gh_body, gh_headers = delivery(harness, body=payload)
    assert harness.post("github", gh_body, gh_headers).status == 413
