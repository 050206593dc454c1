"""CloudFormation behaviour the template relies on, as the deploy test's embedded stack runs it."""

from __future__ import annotations

import json

from tests.conformance.conftest import Cloud

PSEUDO_PARAMETERS = (
    "https://docs.aws.amazon.com/AWSCloudFormation/latest/TemplateReference/pseudo-parameter-reference.html"
)


def _table(keep: str) -> str:
    index = {
        "KeySchema": [{"AttributeName": "status", "KeyType": "HASH"}],
        "Projection": {"ProjectionType": "KEYS_ONLY"},
    }
    return json.dumps(
        {
            "Parameters": {"Keep": {"Type": "String", "Default": keep}},
            "Conditions": {"Keeps": {"Fn::Equals": [{"Ref": "Keep"}, "keep"]}},
            "Resources": {
                "Table": {
                    "Type": "AWS::DynamoDB::Table",
                    "Properties": {
                        "BillingMode": "PAY_PER_REQUEST",
                        "AttributeDefinitions": [
                            {"AttributeName": "pk", "AttributeType": "S"},
                            {"AttributeName": "status", "AttributeType": "S"},
                        ],
                        "KeySchema": [{"AttributeName": "pk", "KeyType": "HASH"}],
                        "GlobalSecondaryIndexes": [
                            {**index, "IndexName": "by-status-new"},
                            {
                                "Fn::If": [
                                    "Keeps",
                                    {**index, "IndexName": "by-status-old"},
                                    {"Ref": "AWS::NoValue"},
                                ]
                            },
                        ],
                    },
                }
            },
            "Outputs": {"Name": {"Value": {"Ref": "Table"}}},
        }
    )


def _indexes(cloud: Cloud, keep: str) -> list[str]:
    cfn, name = cloud.client("cloudformation"), cloud.unique("stack")
    cfn.create_stack(StackName=name, TemplateBody=_table(keep))
    cloud.cleanups.append(lambda: cfn.delete_stack(StackName=name))
    cfn.get_waiter("stack_create_complete").wait(
        StackName=name, WaiterConfig={"Delay": 2, "MaxAttempts": 150}
    )
    outputs = cfn.describe_stacks(StackName=name)["Stacks"][0]["Outputs"]
    table = next(o["OutputValue"] for o in outputs if o["OutputKey"] == "Name")
    described = cloud.client("dynamodb").describe_table(TableName=table)["Table"]
    return sorted(i["IndexName"] for i in described.get("GlobalSecondaryIndexes", []))


def test_a_list_element_that_fn_if_resolves_to_no_value_is_left_out(cloud: Cloud) -> None:
    """AWS (Pseudo parameters reference): ``AWS::NoValue`` removes the property it is returned for
    by ``Fn::If``; as an element of a list, the element. The template keeps an old index on a
    table only for the upgrade's first deploy that way (``PreviousIndexes``)."""
    assert _indexes(cloud, "drop") == ["by-status-new"]
    assert _indexes(cloud, "keep") == ["by-status-new", "by-status-old"]
