"""Who may call the API: IAM (SigV4) on every method, and one role for all tenants (docs/security.md).

Every method's authorization is `AWS_IAM`: API Gateway checks the request's SigV4 signature and
that the caller may `execute-api:Invoke` that method on that path before the function runs, and
answers 403 otherwise. Two roles hold the permissions:

* **TenantRole**, assumed with a session tag `tenant=<account id>` (`sts:AssumeRole` with `Tags`;
  the trust policy refuses a session without it, or with a value that could name more than one
  account's paths: `TENANT_TAG_REFUSED`). Its policy allows `GET /accounts/<tag>`, `GET` of its
  types (`/accounts/<tag>/types`, `/accounts/<tag>/types/*`) and every method under
  `/accounts/<tag>/resources` and `/accounts/<tag>/types/*/resources` (functions/core/
  token_access.py's `tenant_paths`), where `<tag>` is `${aws:PrincipalTag/tenant}`: IAM puts
  the session's tag into the resource ARN, so one role serves every tenant (IAM's role quota is far
  below a SaaS's tenant count) and a session can reach its own account's paths only.
* **AdminRole**: every method on every path, which includes `PUT /accounts/{id}` and
  `PUT /accounts/{id}/types/{type}` (set a limit).

Both trust the deploying AWS account: who may assume them is then that account's own IAM policies'
decision, as for any role.
"""

from __future__ import annotations

from aws_cdk import aws_apigateway as apigateway
from aws_cdk import aws_iam as iam
from constructs import Construct

from functions.core.model import MAX_ID_LENGTH
from functions.core.token_access import tenant_paths
from infra import constants

TENANT_TAG = f"${{aws:PrincipalTag/{constants.TENANT_TAG_KEY}}}"
# Tag values a tenant session may not carry (StringNotLike: none may match). IAM puts the tag into
# the resource ARNs as it is, so a `/` would reach other paths (`globex/resources/r1` is globex's
# resource r1 under `GET /accounts/${tag}`), and `.` makes dot segments. IAM has no regex, so these
# refuse every character STS allows in a tag value ([\p{L}\p{Z}\p{N}_.:/=+\-@]) but an account
# id's letters, digits, `_` and `-`, as far as ASCII goes; `*`, `?` and `$` too (STS refuses them
# today; `${*}` stands for a literal `*`), no value, and one longer than an account id. What is
# left (letters and digits beyond ASCII, separators other than the space) has no meaning in an ARN
# match and names no account: the API refuses such an id.
TENANT_TAG_REFUSED = [
    *(f"*{character}*" for character in ("/", ".", ":", "=", "+", "@", " ", "${*}", "${?}", "${$}")),
    "",
    "?" * (MAX_ID_LENGTH + 1) + "*",
]


class Access(Construct):
    def __init__(self, scope: Construct, construct_id: str, *, rest_api: apigateway.RestApi) -> None:
        super().__init__(scope, construct_id)

        def invoke(method: str, path: str) -> str:
            # The stage by name, not by reference: the same ARN on AWS, and the emulator's
            # CloudFormation resolves a Stage's Ref to "None" (the local gateway reads these back).
            return rest_api.arn_for_execute_api(method, path, constants.API_STAGE_NAME)

        tagged_session = iam.PrincipalWithConditions(
            iam.AccountRootPrincipal(),
            {
                # A tenant session names exactly one tenant, and only with this tag key.
                "Null": {f"aws:RequestTag/{constants.TENANT_TAG_KEY}": "false"},
                "ForAllValues:StringEquals": {"aws:TagKeys": [constants.TENANT_TAG_KEY]},
                "StringNotLike": {f"aws:RequestTag/{constants.TENANT_TAG_KEY}": TENANT_TAG_REFUSED},
            },
        ).with_session_tags()
        self.tenant_role = iam.Role(
            self,
            constants.TENANT_ROLE_ID,
            assumed_by=tagged_session,
            description=f"Calls the API for one tenant: the session tag {constants.TENANT_TAG_KEY} names its account",
        )
        self.tenant_role.add_to_policy(
            iam.PolicyStatement(
                actions=["execute-api:Invoke"],
                # The same paths a JWT tenant may call: its account, its types and their resources.
                resources=[invoke(method, f"/{path}") for method, path in tenant_paths(TENANT_TAG)],
            )
        )
        self.admin_role = iam.Role(
            self,
            constants.ADMIN_ROLE_ID,
            assumed_by=iam.AccountRootPrincipal(),
            description="Calls every method of the API, including setting an account's limit",
        )
        self.admin_role.add_to_policy(
            iam.PolicyStatement(actions=["execute-api:Invoke"], resources=[invoke("*", "/*")])
        )
