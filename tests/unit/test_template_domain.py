"""The optional custom domain, read from template.yaml translated by samtranslator.

samtranslator keeps Conditions as they are, so each case evaluates them (and the URLs the functions
and outputs carry) with the local stack's intrinsics resolver, for the parameters a deploy would pass.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from lockgate_infra.cli.iam import translate
from lockgate_infra.local.intrinsics import Resolver
from lockgate_infra.local.template import load_template

TEMPLATE = Path(__file__).resolve().parents[2] / "template.yaml"
DOMAIN = {
    "DomainName": "hooks.shop.example.com",
    "CertificateArn": "arn:aws:acm:us-east-1:123456789012:certificate/0f1e2d3c-aaaa-bbbb-cccc-123456789abc",
}
API_HOST = "abc123.execute-api.us-east-1.amazonaws.com"
LINK_USERS = ("ApprovalNotifierFunction", "ScheduledJobsFunction")  # they sign and send approval links


def _deployed(parameters: dict[str, str]) -> tuple[dict[str, Any], Resolver]:
    """The translation for ``parameters`` and a resolver that decides its conditions and URLs."""
    cfn = translate(load_template(TEMPLATE), parameters)
    return cfn, Resolver(cfn, parameters, {"WebhookApi": API_HOST.split(".", 1)[0]}, {})


def _present(cfn: dict[str, Any], resolver: Resolver) -> set[str]:
    return {
        name
        for name, resource in cfn["Resources"].items()
        if "Condition" not in resource or resolver.condition(resource["Condition"])
    }


def _link_bases(cfn: dict[str, Any], resolver: Resolver) -> set[str]:
    return {
        resolver.resolve_string(
            cfn["Resources"][f]["Properties"]["Environment"]["Variables"]["APPROVAL_BASE_URL"], f
        )
        for f in LINK_USERS
    }


def _output(cfn: dict[str, Any], resolver: Resolver, name: str) -> str:
    return resolver.resolve_string(cfn["Outputs"][name]["Value"], name)


def test_given_a_domain_and_certificate_then_the_api_is_mapped_on_it_and_every_link_uses_it():
    cfn, resolver = _deployed(DOMAIN)
    domain = cfn["Resources"]["WebhookApiDomain"]["Properties"]
    assert resolver.resolve(domain["DomainName"], "") == DOMAIN["DomainName"]
    ((configuration),) = domain["DomainNameConfigurations"]
    assert resolver.resolve(configuration["CertificateArn"], "") == DOMAIN["CertificateArn"]
    assert (configuration["EndpointType"], configuration["SecurityPolicy"]) == ("REGIONAL", "TLS_1_2")
    # The mapping puts the HTTP API's own stage (SAM's $default) at the domain's root.
    mapping = cfn["Resources"]["WebhookApiDomainMapping"]["Properties"]
    assert mapping["ApiId"] == {"Ref": "WebhookApi"} and mapping["DomainName"] == {"Ref": "WebhookApiDomain"}
    stage = cfn["Resources"][mapping["Stage"]["Ref"]]
    assert stage["Type"] == "AWS::ApiGatewayV2::Stage" and stage["Properties"]["ApiId"] == {
        "Ref": "WebhookApi"
    }
    assert {"WebhookApiDomain", "WebhookApiDomainMapping"} <= _present(cfn, resolver)
    # Approval links (notifier, digest) and the URLs a user gives providers are on the domain.
    assert _link_bases(cfn, resolver) == {"https://hooks.shop.example.com/approvals/"}
    assert _output(cfn, resolver, "ApprovalBaseUrl") == "https://hooks.shop.example.com/approvals/"
    assert _output(cfn, resolver, "WebhookBaseUrl") == "https://hooks.shop.example.com/webhooks/"
    assert resolver.condition(cfn["Outputs"]["CustomDomainTarget"]["Condition"])


def test_given_no_domain_then_nothing_is_added_and_links_stay_on_the_execute_api_host():
    cfn, resolver = _deployed({})
    conditional = {n for n, r in cfn["Resources"].items() if r.get("Condition") == "HasDomain"}
    assert conditional == {"WebhookApiDomain", "WebhookApiDomainMapping"}
    # Exactly the resources a deploy with the domain creates, but the domain's own two.
    assert _present(cfn, resolver) == _present(*_deployed(DOMAIN)) - conditional
    assert _link_bases(cfn, resolver) == {f"https://{API_HOST}/approvals/"}
    assert _output(cfn, resolver, "WebhookBaseUrl") == f"https://{API_HOST}/webhooks/"
    assert not resolver.condition("HasDomain")


@pytest.mark.parametrize(
    ("parameters", "refused"),
    [
        ({"DomainName": "hooks.shop.example.com"}, True),  # a domain with no certificate
        (DOMAIN, False),
        ({}, False),
    ],
)
def test_given_the_domain_rule_then_a_domain_without_a_certificate_is_refused_before_any_change(
    parameters, refused
):
    # CloudFormation checks Rules before it creates anything; evaluated here as it would.
    template = load_template(TEMPLATE)
    rule = template["Rules"]["DomainNeedsCertificate"]
    resolver = Resolver(template, parameters, {}, {})
    applies = resolver.resolve(rule["RuleCondition"], "RuleCondition")
    holds = all(resolver.resolve(a["Assert"], "Assert") for a in rule["Assertions"])
    assert (applies and not holds) is refused
