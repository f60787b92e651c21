"""The projects service's infrastructure, as a CDK construct to put in your own stack: its table, its
function, its REST API behind your Cognito user pool, and the one permission it needs on the
limits API. The limits API is a `HybridCounter` in your app (app.py):

    ProjectsService(stack, "Projects", limits=limits, user_pool=user_pool)

or a hybrid counter stack deployed on its own, by its URL and ARN:

    ProjectsService(
        stack,
        "Projects",
        limits_api_url=limits_api_url,  # the hybrid counter stack's ApiUrl output
        limits_api_arn=f"arn:aws:execute-api:{region}:{account}:{limits_api_id}/prod",
        user_pool=user_pool,  # your users, each with a custom:tenant attribute
    )
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

import aws_cdk as cdk
from aws_cdk import aws_apigateway as apigateway
from aws_cdk import aws_cognito as cognito
from aws_cdk import aws_dynamodb as dynamodb
from aws_cdk import aws_iam as iam
from aws_cdk import aws_lambda as lambda_
from constructs import Construct

if TYPE_CHECKING:  # the construct's package is needed only by an app that has one
    from infra.hybrid_counter import HybridCounter

HERE = Path(__file__).resolve().parent
# handler.py's RESOURCE_TYPE (not imported: the handler's own packages need not be installed to synthesize).
RESOURCE_TYPE = "projects"
RUNTIME = lambda_.Runtime.PYTHON_3_12


def function_code() -> lambda_.Code:
    """handler.py and requirements.txt, installed by pip in the Lambda runtime's own image (Docker,
    at synth time), so that compiled wheels (pydantic's) match the runtime."""
    return lambda_.Code.from_asset(
        str(HERE),
        exclude=["*", "!handler.py", "!requirements.txt", "!wheels", "!wheels/*"],
        bundling=cdk.BundlingOptions(
            image=RUNTIME.bundling_image,
            command=[
                "bash",
                "-c",
                "pip install -r requirements.txt --find-links wheels -t /asset-output && cp handler.py /asset-output/",
            ],
        ),
    )


class ProjectsService(Construct):
    """`limits`: the limits API, a `HybridCounter` of the same app; or, for one deployed on its own,
    `limits_api_url`: its base URL (the hybrid counter stack's `ApiUrl` output) and
    `limits_api_arn`: its stage's execute-api ARN, `arn:aws:execute-api:REGION:ACCOUNT:API_ID/STAGE`.
    `user_pool`: who may call this API; each user's `custom:tenant` attribute names their tenant,
    which is the tenant's account id in the limits service."""

    def __init__(
        self,
        scope: Construct,
        construct_id: str,
        *,
        user_pool: cognito.IUserPool,
        limits: HybridCounter | None = None,
        limits_api_url: str | None = None,
        limits_api_arn: str | None = None,
        code: lambda_.Code | None = None,
    ) -> None:
        super().__init__(scope, construct_id)
        if limits is not None and limits_api_url is None and limits_api_arn is None:
            api_url = limits.api_url
        elif limits is None and limits_api_url and limits_api_arn:
            api_url = limits_api_url
        else:
            raise ValueError("give the limits API as `limits`, or as `limits_api_url` and `limits_api_arn`")
        # One item per (tenant, project name): a tenant's projects are one Query. expires_at is the
        # tombstones' end; TTL deletes them some time after (handler.py reads it as gone at once).
        self.table = dynamodb.Table(
            self,
            "Table",
            partition_key=dynamodb.Attribute(name="tenant_id", type=dynamodb.AttributeType.STRING),
            sort_key=dynamodb.Attribute(name="name", type=dynamodb.AttributeType.STRING),
            billing_mode=dynamodb.BillingMode.PAY_PER_REQUEST,
            time_to_live_attribute="expires_at",
            point_in_time_recovery_specification=dynamodb.PointInTimeRecoverySpecification(
                point_in_time_recovery_enabled=True
            ),
        )
        self.function = lambda_.Function(
            self,
            "Function",
            runtime=RUNTIME,
            handler="handler.handler",
            code=code or function_code(),
            # API Gateway's integration timeout: a request runs no longer than its caller waits.
            timeout=cdk.Duration.seconds(29),
            environment={"PROJECTS_TABLE": self.table.table_name, "LIMITS_API_URL": api_url},
        )
        self.table.grant(self.function, "dynamodb:GetItem", "dynamodb:PutItem", "dynamodb:UpdateItem", "dynamodb:Query")
        # The limits API authorizes each call by IAM (SigV4): the function's own role may reserve
        # and release slots of the `projects` type of any tenant, and not set a limit. Which tenant
        # a request acts for is this service's own check (handler.py, tenant()).
        if limits is not None:
            limits.grant_tenant_access(self.function)  # reading an account's usage too, and every type's slots
        else:
            projects = f"{limits_api_arn}/*/accounts/*/types/{RESOURCE_TYPE}/resources"
            self.function.add_to_role_policy(
                iam.PolicyStatement(actions=["execute-api:Invoke"], resources=[projects, f"{projects}/*"])
            )
        self.api = apigateway.LambdaRestApi(
            self,
            "Api",
            handler=self.function,
            default_method_options=apigateway.MethodOptions(
                authorizer=apigateway.CognitoUserPoolsAuthorizer(self, "Users", cognito_user_pools=[user_pool])
            ),
        )
