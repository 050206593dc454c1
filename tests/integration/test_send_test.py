"""`lockgate inbox send-test` against a deployed stack: where it sends, and what it signs."""

from __future__ import annotations

import argparse
import json

import pytest

from lockgate.config import load_config
from lockgate.inbox.routing import TEST_EVENT
from lockgate.webhooks.schemes import scheme_for
from lockgate_infra.cli.send_test import test_request as signed_test_request
from lockgate_infra.cli.send_test import webhook_url
from lockgate_infra.cli.targets import Target, TargetError
from tests.integration.test_cli import ROOT
from tests.support import Aws

TOPIC = {"Topic": {"Type": "AWS::SNS::Topic"}}


def deployed(aws: Aws, outputs: dict[str, object]) -> Target:
    aws.client("cloudformation").create_stack(
        StackName="lockgate", TemplateBody=json.dumps({"Resources": TOPIC, "Outputs": outputs})
    )
    return Target(aws.session, None, {}, "stack lockgate")


def test_a_deployed_stack_is_sent_to_its_webhook_base_url_output(aws: Aws) -> None:
    target = deployed(aws, {"WebhookBaseUrl": {"Value": "https://hooks.shop.example.com/webhooks/"}})
    url = webhook_url(argparse.Namespace(stack="lockgate"), target, "github")
    assert url == "https://hooks.shop.example.com/webhooks/github"


def test_a_stack_without_the_output_is_one_clear_error(aws: Aws) -> None:
    target = deployed(aws, {"TopicArn": {"Value": {"Ref": "Topic"}}})
    with pytest.raises(TargetError, match="stack lockgate has no WebhookBaseUrl output"):
        webhook_url(argparse.Namespace(stack="lockgate"), target, "github")


@pytest.mark.parametrize("name", sorted(load_config(ROOT / "lockgate.toml").sources))
def test_every_source_signs_a_verifiable_test_event(name: str) -> None:
    # Given each configured source (every scheme Lockgate verifies)
    source = load_config(ROOT / "lockgate.toml").sources[name]
    secret = (
        "whsec_" + "dGVzdC1zZWNyZXQtZm9yLXNlbmQtdGVzdA==" if source.scheme == "standard" else "s3cret-value"
    )
    body, headers = signed_test_request(source, secret, 1_764_000_000, "0a1b2c3d")
    scheme = scheme_for(source)
    # Then the receiver's own verifier accepts it, and it is the test event with its own id
    scheme.verify(body, headers, [secret], 1_764_000_000)
    identity = scheme.identify(body, headers)
    assert identity.event_type == TEST_EVENT
    assert "0a1b2c3d" in identity.delivery_id
    # and a wrong secret is refused, as it would be by the stack
    with pytest.raises(Exception, match="signature|no usable"):
        scheme.verify(
            body, headers, ["whsec_b3RoZXI=" if source.scheme == "standard" else "other"], 1_764_000_000
        )
