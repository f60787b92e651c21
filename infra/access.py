"""Who may call the API: IAM (SigV4) on every method, and one role for all tenants (docs/security.md).

Every method's authorization is `AWS_IAM`: API Gateway checks the request's SigV4 signature and
that the caller may `execute-api:Invoke` that method on that path before the function runs, and
answers 403 otherwise. Two roles hold the permissions:

* **TenantRole**, assumed with a session tag `tenant=<account id>` (`sts:AssumeRole` with `Tags`;
  the trust policy refuses a session without it, or with a value that could name more than one
  account's paths: `TENANT_TAG_REFUSED`). Its policy allows `GET /accounts/<tag>`,
  `GET /accounts/<tag>/admission` and `GET /accounts/<tag>/history`, `GET` of its types
  (`/accounts/<tag>/types`, `/accounts/<tag>/types/*`, which includes a type's admission and
  history) and every method under
  `/accounts/<tag>/resources` and `/accounts/<tag>/types/*/resources` (functions/core/
  token_access.py's `tenant_paths`), where `<tag>` is `${aws:PrincipalTag/tenant}`: IAM puts
  the session's tag into the resource ARN, so one role serves every tenant (IAM's role quota is far
  below a SaaS's tenant count) and a session can reach its own account's paths only.
* **AdminRole**: every method on every path, which includes `PUT /accounts/{id}` and
  `PUT /accounts/{id}/types/{type}` (set a limit).

Both trust the deploying AWS account unless the deployer names whom each trusts
(`IamAuthorization` in infra/props.py): who may assume them is then that account's own IAM
policies' decision, as for any role. The tenant role's session-tag conditions hold whoever it trusts.
"""

from __future__ import annotations

from typing import Final

from aws_cdk import aws_apigateway as apigateway
from aws_cdk import aws_iam as iam
from constructs import Construct

from functions.core.model import MAX_ID_LENGTH
from functions.core.token_access import tenant_paths
from infra.api import API_STAGE_NAME
from infra.outputs import TENANT_TAG_KEY

# Construct ids (stable: they feed the CloudFormation logical ids).
TENANT_ROLE_ID: Final = "TenantRole"
ADMIN_ROLE_ID: Final = "AdminRole"

TENANT_TAG = f"${{aws:PrincipalTag/{TENANT_TAG_KEY}}}"
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


def invoke_arn(rest_api: apigateway.IRestApi, method: str, path: str) -> str:
    """The execute-api ARN of `method` on `path` of the API's stage."""
    # The stage by name, not by reference: the same ARN on AWS, and the emulator's CloudFormation
    # resolves a Stage's Ref to "None" (the local gateway reads these back).
    return rest_api.arn_for_execute_api(method, path, API_STAGE_NAME)


def tenant_invoke_arns(rest_api: apigateway.IRestApi, account: str) -> list[str]:
    """What a tenant may call (the JWT mode's rule too: token_access.tenant_paths): its account, its
    types and their resources, never a limit. `account`: the session tag in the tenant role's policy,
    `*` in a grant for a backend acting for every tenant (`HybridCounter.grant_tenant_access`)."""
    return [invoke_arn(rest_api, method, f"/{path}") for method, path in tenant_paths(account)]


class Access(Construct):
    def __init__(
        self,
        scope: Construct,
        construct_id: str,
        *,
        rest_api: apigateway.RestApi,
        tenant_role_trusted_by: iam.IPrincipal | None = None,
        admin_role_trusted_by: iam.IPrincipal | None = None,
    ) -> None:
        """`tenant_role_trusted_by`, `admin_role_trusted_by`: who may assume each role; None: the
        deploying account."""
        super().__init__(scope, construct_id)

        tagged_session = iam.PrincipalWithConditions(
            tenant_role_trusted_by or iam.AccountRootPrincipal(),
            {
                # A tenant session names exactly one tenant, and only with this tag key.
                "Null": {f"aws:RequestTag/{TENANT_TAG_KEY}": "false"},
                "ForAllValues:StringEquals": {"aws:TagKeys": [TENANT_TAG_KEY]},
                "StringNotLike": {f"aws:RequestTag/{TENANT_TAG_KEY}": TENANT_TAG_REFUSED},
            },
        ).with_session_tags()
        self.tenant_role = iam.Role(
            self,
            TENANT_ROLE_ID,
            assumed_by=tagged_session,
            description=f"Calls the API for one tenant: the session tag {TENANT_TAG_KEY} names its account",
        )
        self.tenant_role.add_to_policy(
            iam.PolicyStatement(
                actions=["execute-api:Invoke"],
                resources=tenant_invoke_arns(rest_api, TENANT_TAG),
            )
        )
        self.admin_role = iam.Role(
            self,
            ADMIN_ROLE_ID,
            assumed_by=admin_role_trusted_by or iam.AccountRootPrincipal(),
            description="Calls every method of the API, including setting an account's limit",
        )
        self.admin_role.add_to_policy(
            iam.PolicyStatement(actions=["execute-api:Invoke"], resources=[invoke_arn(rest_api, "*", "/*")])
        )
