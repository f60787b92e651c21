"""The cdk-nag AwsSolutions findings a counter keeps on purpose, each with the reason a reviewer
can check (tests/infra/test_cdk_nag.py runs the pack: no other finding may appear).
"""

from __future__ import annotations

import aws_cdk as cdk
from aws_cdk import aws_lambda as lambda_
from constructs import Construct

from infra.access import Access
from infra.api import Api
from infra.bundling import LAMBDA_RUNTIME
from infra.outputs import TENANT_TAG_KEY

XRAY = (
    "Resource::* is X-Ray's PutTraceSegments and PutTelemetryRecords (and, for the stream consumer, "
    "dynamodb:ListStreams, which Lambda's stream poller needs): none has resource-level permissions "
    "(Service Authorization Reference). Every table and stream action is on exact ARNs (infra/table_access.py)."
)
RUNTIME = (
    f"{LAMBDA_RUNTIME.name} is the runtime the package's wheels are built for and proven on; moving on is "
    "one constant (infra/bundling.py LAMBDA_RUNTIME) with the package test of issue 'Fidelity and maintainability'."
)
API_FINDINGS = {
    "AwsSolutions-COG4": "Every method is authorized with IAM (SigV4, AWS_IAM), tenant-scoped by a session tag, "
    "or with -c authorizer=jwt by a token authorizer that verifies any OIDC issuer's JWTs, Cognito's included "
    "(docs/security.md); a Cognito user pool authorizer would tie the API to one issuer.",
    "AwsSolutions-APIG2": "The function validates every request against its models (docs/openapi.json) and "
    "answers 400 in the error envelope; a request validator has no models to check with a proxy integration.",
    "AwsSolutions-APIG3": "A WAF web ACL is the deployer's choice of rules and cost; SigV4 authorization "
    "answers every unsigned request before the function.",
}
API_LOGS_ROLE = (
    "API Gateway's region-wide CloudWatch role has the policy AWS prescribes for it (API Gateway developer "
    "guide, 'Set up CloudWatch logging for REST APIs'); only apigateway.amazonaws.com may assume it. "
    "`-c apiGatewayCloudWatchRole=existing` uses the account's own role instead."
)


def _acknowledge(construct: Construct, rule: str, reason: str) -> None:
    cdk.Validations.of(construct).acknowledge(cdk.Acknowledgment(id=rule, reason=reason))


def explain(counter: Construct, api: Api, access: Access | None) -> None:
    """Acknowledges the findings on `counter`'s own resources (a user's resources beside it are theirs)."""
    for function in (c for c in counter.node.find_all() if isinstance(c, lambda_.Function)):
        _acknowledge(function, "AwsSolutions-L1", RUNTIME)
        if isinstance(function.role, Construct):
            _acknowledge(function.role, "AwsSolutions-IAM5[Resource::*]", XRAY)
    for rule, reason in API_FINDINGS.items():
        _acknowledge(api.rest_api, rule, reason)
    logs_role = api.rest_api.node.try_find_child("CloudWatchRole")
    if isinstance(logs_role, Construct):
        policy = "Policy::arn:<AWS::Partition>:iam::aws:policy/service-role/AmazonAPIGatewayPushToCloudWatchLogs"
        _acknowledge(logs_role, f"AwsSolutions-IAM4[{policy}]", API_LOGS_ROLE)
    if access is not None:
        _explain_roles(api, access)


def _explain_roles(api: Api, access: Access) -> None:
    # IAM5 reports each wildcard resource on its own, named with the REST API's logical id.
    stack_of = cdk.Stack.of(api.rest_api)
    rest_api = stack_of.resolve(stack_of.get_logical_id(api.rest_api.node.default_child))  # type: ignore[arg-type]
    execute_api = f"Resource::arn:<AWS::Partition>:execute-api:<AWS::Region>:<AWS::AccountId>:<{rest_api}>/prod"
    account = f"accounts/<aws:PrincipalTag/{TENANT_TAG_KEY}>"
    resources = (f"{account}/resources", f"{account}/types/*/resources")
    for finding in (*resources, *(f"{each}/*" for each in resources)):
        _acknowledge(
            access.tenant_role,
            f"AwsSolutions-IAM5[{execute_api}/*/{finding}]",
            "Any method under the tenant's own resources (its default type's and each type's), the tenant named "
            "by the session tag: the wildcards are the method, the type and the resource id, never another "
            "tenant (docs/security.md).",
        )
    _acknowledge(
        access.tenant_role,
        f"AwsSolutions-IAM5[{execute_api}/GET/{account}/types/*]",
        "GET of the tenant's own types, the tenant named by the session tag: the wildcard is the type (and "
        "its resources, which the tenant may read), never another tenant, never a PUT (docs/security.md).",
    )
    _acknowledge(
        access.admin_role,
        f"AwsSolutions-IAM5[{execute_api}/*/*]",
        "The admin role calls every method on every path of this one API, by design (docs/security.md).",
    )
