"""The hybrid counter as one CDK construct: the table and its stream, the API and who may call it,
the counting pipeline, the dead-letter queues and their redrive, the sweeper, the monitoring, and
the usage events' bus and publisher (docs/events.md).

The app's stack (infra/stack.py) is one use of it; a user adds it to their own CDK app:

    limits = HybridCounter(stack, "Limits", HybridCounterProps(alarm_email="ops@example.com"))
    limits.grant_tenant_access(my_function)

Every resource name is CloudFormation's to generate, but the Contributor Insights rule's, which is
built from the stack's name and the construct's path: two counters in one stack, or one in each of
a user's Stages, deploy side by side. Of stack outputs it makes only API Gateway's own endpoint
output, never exported: its properties hold what a user outputs or wires (the app's stack outputs
them under fixed names).
"""

from __future__ import annotations

from datetime import timedelta
from typing import Final

import aws_cdk as cdk
from aws_cdk import aws_apigateway as apigateway
from aws_cdk import aws_cloudwatch as cloudwatch
from aws_cdk import aws_dynamodb as dynamodb
from aws_cdk import aws_events as events
from aws_cdk import aws_iam as iam
from aws_cdk import aws_lambda as lambda_
from aws_cdk import aws_logs as logs
from aws_cdk import aws_sns as sns
from aws_cdk import aws_sqs as sqs
from constructs import Construct

from infra.access import Access, invoke_arn, tenant_invoke_arns
from infra.api import Api
from infra.bundling import PipRunner, lambda_package, run_pip
from infra.counting import Counting
from infra.data import DataStore
from infra.dead_letters import DeadLetters
from infra.jwt_authorizer import JwtAuthorizer
from infra.monitoring import Monitoring
from infra.nag import explain as explain_nag_findings
from infra.outputs import TENANT_TAG_KEY
from infra.plan_rollout import PlanRollout
from infra.props import (
    ApiLogsRole,
    ExistingTable,
    HybridCounterProps,
    IamAuthorization,
    InvalidProps,
    JwtAuthorization,
    UsageWebhook,
)
from infra.python_function import SharedSettings
from infra.refusals import LimitRefusals
from infra.sweeper import Sweeper
from infra.usage_events import UsageEvents

# The ids of the counter's parts (stable: they feed the CloudFormation logical ids).
DATA_CONSTRUCT_ID: Final = "Data"
DEAD_LETTERS_CONSTRUCT_ID: Final = "DeadLetters"
COUNTING_CONSTRUCT_ID: Final = "Counting"
API_CONSTRUCT_ID: Final = "Api"
ACCESS_CONSTRUCT_ID: Final = "Access"
TOKEN_AUTHORIZER_CONSTRUCT_ID: Final = "TokenAuthorizer"  # noqa: S105 - a construct id
MONITORING_CONSTRUCT_ID: Final = "Monitoring"
SWEEPER_CONSTRUCT_ID: Final = "Sweeper"
EVENTS_CONSTRUCT_ID: Final = "UsageEvents"
REFUSALS_CONSTRUCT_ID: Final = "LimitRefusals"
PLAN_ROLLOUT_CONSTRUCT_ID: Final = "PlanRollout"

__all__ = [
    "ApiLogsRole",
    "ExistingTable",
    "HybridCounter",
    "HybridCounterProps",
    "IamAuthorization",
    "InvalidProps",
    "JwtAuthorization",
    "UsageWebhook",
]

# CloudWatch's limit on a Contributor Insights rule's name.
_MAX_RULE_NAME = 128
_RULE_NAME_SUFFIX = "-throttled-tenants"


class HybridCounter(Construct):
    """Per-tenant limits on resources, counted exactly and admitted at once (README)."""

    def __init__(
        self,
        scope: Construct,
        construct_id: str,
        props: HybridCounterProps | None = None,
        *,
        pip: PipRunner = run_pip,
    ) -> None:
        """`pip` runs the bundler's pip install (tests give one that records it)."""
        super().__init__(scope, construct_id)
        props = props or HybridCounterProps()
        self.props = props
        shared = SharedSettings(
            # Built once: every function takes the package and the architecture its wheels are for.
            package=lambda_package(props.architecture, pip=pip),
            removal_policy=props.removal_policy,
            tombstone_retention=timedelta(seconds=props.idempotency_window_seconds),
        )
        data = DataStore(
            self,
            DATA_CONSTRUCT_ID,
            removal_policy=props.removal_policy,
            existing_table=props.existing_table,
            max_reads=props.table_max_read_request_units,
            max_writes=props.table_max_write_request_units,
        )
        # Before counting: the consumer's on-failure destination is DLQ 1.
        dead_letters = DeadLetters(self, DEAD_LETTERS_CONSTRUCT_ID, table=data.table, shared=shared)
        counting = Counting(
            self,
            COUNTING_CONSTRUCT_ID,
            table=data.table,
            stream_failure_queue=dead_letters.stream_failure_queue,
            shared=shared,
            batching_window_seconds=props.stream_batching_window_seconds,
            parallelization_factor=props.stream_parallelization_factor,
        )
        authorization = props.authorization
        jwt_authorizer = (
            JwtAuthorizer(
                self,
                TOKEN_AUTHORIZER_CONSTRUCT_ID,
                shared=shared,
                table_name=data.table.table_name,
                jwt=authorization,
            )
            if isinstance(authorization, JwtAuthorization)
            else None
        )
        api = Api(
            self,
            API_CONSTRUCT_ID,
            table=data.table,
            shared=shared,
            tenant_rate=props.tenant_rate,
            rate_limit=props.api_rate_limit,
            burst_limit=props.api_burst_limit,
            logs_role=props.api_logs_role,
            authorizer=jwt_authorizer.authorizer if jwt_authorizer else None,
        )
        # The roles callers assume for SigV4; with the JWT authorizer, tokens take their place.
        access = None
        if isinstance(authorization, IamAuthorization):
            access = Access(
                self,
                ACCESS_CONSTRUCT_ID,
                rest_api=api.rest_api,
                tenant_role_trusted_by=authorization.tenant_role_trusted_by,
                admin_role_trusted_by=authorization.admin_role_trusted_by,
            )
        sweeper = Sweeper(self, SWEEPER_CONSTRUCT_ID, table=data.table, shared=shared)
        monitoring = Monitoring(
            self,
            MONITORING_CONSTRUCT_ID,
            table=data.table,
            api=api,
            counting=counting,
            dead_letters=dead_letters,
            sweeper=sweeper,
            alarm_email=props.alarm_email,
            name_prefix=self._name_prefix(),
        )
        usage_events = UsageEvents(
            self,
            EVENTS_CONSTRUCT_ID,
            table=data.table,
            shared=shared,
            alarm_topic=monitoring.topic,
            event_bus=props.event_bus,
            # The address subscribed to the alarm topic hears of threshold crossings too.
            thresholds_to_alarm_topic=props.alarm_email is not None,
            webhook=props.usage_webhook,
            name_prefix=self._name_prefix(),
        )
        limit_refusals = LimitRefusals(
            self,
            REFUSALS_CONSTRUCT_ID,
            table=data.table,
            shared=shared,
            api_function=api.function,
            alarm_topic=monitoring.topic,
        )
        plan_rollout = PlanRollout(
            self, PLAN_ROLLOUT_CONSTRUCT_ID, table=data.table, shared=shared, alarm_topic=monitoring.topic
        )
        # Last, so that every function reading the stream, whichever construct made it, is watched.
        monitoring.watch_stream_consumers(self)
        explain_nag_findings(self, api, access)

        self._api = api
        self._data = data
        self._dead_letters = dead_letters
        self._access = access
        self._sweeper = sweeper
        self._monitoring = monitoring
        self._usage_events = usage_events
        self._limit_refusals = limit_refusals
        self._plan_rollout = plan_rollout

    def _name_prefix(self) -> str:
        """The stack's name and this construct's path in it: unique in an account and region as
        stack names are. A `Default` id is left out, as CDK leaves it out of logical ids: the app's
        stack keeps the names it was deployed with."""
        stack = cdk.Stack.of(self)
        path = self.node.path.removeprefix(f"{stack.node.path}/").split("/")
        prefix = "-".join([stack.stack_name, *(part for part in path if part != "Default")])
        if len(prefix) + len(_RULE_NAME_SUFFIX) <= _MAX_RULE_NAME:
            return prefix
        return cdk.Names.unique_resource_name(self, max_length=_MAX_RULE_NAME - len(_RULE_NAME_SUFFIX), separator="-")

    # --- what a user wires or outputs -------------------------------------------------------------

    @property
    def api_url(self) -> str:
        """The API's base URL, its stage included (`https://{id}.execute-api.{region}.amazonaws.com/prod/`)."""
        return self._api.url

    @property
    def api(self) -> apigateway.RestApi:
        return self._api.rest_api

    @property
    def api_function(self) -> lambda_.IFunction:
        return self._api.function

    @property
    def table(self) -> dynamodb.ITable:
        """The counter's table (or the existing one it was given). Its layout is the counter's own:
        read counts through the API."""
        return self._data.table

    @property
    def table_stream_arn(self) -> str:
        stream_arn = self.table.table_stream_arn
        if stream_arn is None:  # the table always has a stream (an existing one is given with it)
            raise AssertionError("the table has no stream")
        return stream_arn

    @property
    def tenant_role(self) -> iam.IRole | None:
        """Assumed with the session tag `tenant_tag_key`=<account id> to call that account's paths;
        None with JWT authorization."""
        return self._access.tenant_role if self._access else None

    @property
    def admin_role(self) -> iam.IRole | None:
        """Assumed to call every path, including setting an account's limit; None with JWT authorization."""
        return self._access.admin_role if self._access else None

    @property
    def tenant_tag_key(self) -> str:
        """The session tag naming a tenant role session's account."""
        return TENANT_TAG_KEY

    @property
    def dlq1(self) -> sqs.IQueue:
        """Failed stream batches, drained by the redrive function."""
        return self._dead_letters.stream_failure_queue

    @property
    def dlq2(self) -> sqs.IQueue:
        """Batches the redrive could not apply: for operators (docs/operations.md)."""
        return self._dead_letters.final_queue

    @property
    def dlq2_alarm(self) -> cloudwatch.IAlarm:
        return self._dead_letters.final_queue_alarm

    @property
    def sweeper_function(self) -> lambda_.IFunction:
        """The scheduled sweeper (`python -m ops sweep` runs it)."""
        return self._sweeper.function

    @property
    def alarm_topic(self) -> sns.ITopic:
        """Every alarm publishes here when it fires and when it is over."""
        return self._monitoring.topic

    @property
    def dashboard(self) -> cloudwatch.Dashboard:
        return self._monitoring.dashboard

    @property
    def event_bus(self) -> events.IEventBus:
        """The bus usage events go on (docs/events.md): the `event_bus` prop's, or the counter's own."""
        return self._usage_events.bus

    @property
    def events_dlq(self) -> sqs.IQueue:
        """Batches of usage events the publisher gave up on (`python -m ops events replay`)."""
        return self._usage_events.failure_queue

    @property
    def refusals_dlq(self) -> sqs.IQueue:
        """Refusal lines the aggregator could not count, and minutes the emitter could not announce."""
        return self._limit_refusals.failure_queue

    @property
    def refusals_dlq_alarm(self) -> cloudwatch.IAlarm:
        return self._limit_refusals.failure_queue_alarm

    @property
    def refusal_aggregator_function(self) -> lambda_.IFunction:
        """Counts the API's refusal lines per quota and minute (`python -m ops events refusals replay`
        reads its settings)."""
        return self._limit_refusals.aggregator

    @property
    def events_dlq_alarm(self) -> cloudwatch.IAlarm:
        return self._usage_events.failure_queue_alarm

    @property
    def events_log_group(self) -> logs.ILogGroup:
        """Every usage event the bus carried (`python -m ops events` reads it)."""
        return self._usage_events.log_group

    @property
    def event_publisher_function(self) -> lambda_.IFunction:
        return self._usage_events.publisher_function

    # --- grants for the user's own functions and roles ---------------------------------------------

    def grant_tenant_access(self, grantee: iam.IGrantable) -> iam.Grant:
        """Lets `grantee` call what a tenant may call, for every tenant, with its own credentials:
        read an account, and create, list, read and delete its resources; not set a limit.

        For a SaaS backend that acts for each of its tenants and checks which tenant a request is
        for itself (examples/projects). To keep a function to one tenant's paths by IAM, use
        `grant_assume_tenant_role`.
        """
        return self._grant_invoke(grantee, tenant_invoke_arns(self.api, "*"))

    def grant_admin_access(self, grantee: iam.IGrantable) -> iam.Grant:
        """Lets `grantee` call every method on every path with its own credentials, as the admin
        role may: every tenant's paths, and setting an account's limit."""
        return self._grant_invoke(grantee, [invoke_arn(self.api, "*", "/*")])

    def grant_assume_tenant_role(self, grantee: iam.IGrantable) -> iam.Grant:
        """Lets `grantee` assume the tenant role with the session tag naming one tenant
        (`sts:AssumeRole` and `sts:TagSession` on it), and so call that tenant's paths only.

        The function assumes the role per tenant, `sts.assume_role(RoleArn=tenant_role.role_arn,
        RoleSessionName=..., Tags=[{"Key": tenant_tag_key, "Value": account_id}])`, and signs with
        that session (the Python client takes it as `session=`). The role's trust refuses a session
        without exactly that one tag, and a grantee outside the role's trust
        (`IamAuthorization.tenant_role_trusted_by`) whatever its own policy allows.
        """
        role = self._role(self.tenant_role)
        return role.grant_assume_role(grantee.grant_principal).combine(
            role.grant(grantee.grant_principal, "sts:TagSession")
        )

    def _grant_invoke(self, grantee: iam.IGrantable, resource_arns: list[str]) -> iam.Grant:
        self._role(self.admin_role)  # the same refusal with JWT authorization
        return iam.Grant.add_to_principal(grantee=grantee, actions=["execute-api:Invoke"], resource_arns=resource_arns)

    def _role(self, role: iam.IRole | None) -> iam.IRole:
        if role is None:
            raise ValueError(
                "this counter authorizes with JwtAuthorization: callers present bearer tokens, and API "
                "Gateway does not check IAM permissions, so there is no IAM access to grant"
            )
        return role
