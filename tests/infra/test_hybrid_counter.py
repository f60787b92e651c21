"""The stack as a construct: `HybridCounter` in a user's own stack, twice in one stack and inside a
user's Stage, each instance with resources, names, grants and properties of its own; and the app's
stack, one use of it, with the logical ids a deployed stack already has."""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any

import aws_cdk as cdk
import pytest
from aws_cdk import aws_events as events
from aws_cdk import aws_iam as iam
from aws_cdk import aws_lambda as lambda_

from infra import options
from infra.api import API_STAGE_NAME
from infra.hybrid_counter import (
    ApiLogsRole,
    ExistingTable,
    HybridCounter,
    HybridCounterProps,
    IamAuthorization,
    JwtAuthorization,
)
from infra.outputs import DEFAULT_STACK_NAME, OUTPUT_API_URL
from infra.synth import cdk_json_context, synth_template_json
from local.iam_policy import allowed, execute_api_arn
from tests.support.tenant_paths import TENANT_ACME_PATHS

Resources = dict[str, dict[str, Any]]


def new_app() -> cdk.App:
    return cdk.App(context={**cdk_json_context(), options.CDK_BUNDLING_STACKS_CONTEXT_KEY: []})


def of_type(template: dict[str, Any], resource_type: str) -> Resources:
    return {name: r for name, r in template["Resources"].items() if r["Type"] == resource_type}


def logical_id(construct: Any) -> str:
    """The logical id of an L2 construct's resource, or of an L1 given itself."""
    resource = construct.node.default_child if isinstance(construct.node.default_child, cdk.CfnElement) else construct
    return str(cdk.Stack.of(resource).resolve(cdk.Stack.of(resource).get_logical_id(resource)))


def statements_of_role(template: dict[str, Any], role_id: str) -> list[dict[str, Any]]:
    return [
        statement
        for policy in of_type(template, "AWS::IAM::Policy").values()
        if {"Ref": role_id} in policy["Properties"]["Roles"]
        for statement in policy["Properties"]["PolicyDocument"]["Statement"]
    ]


def as_list(value: Any) -> list[Any]:
    return value if isinstance(value, list) else [value]


def backend_function(stack: cdk.Stack, construct_id: str = "Backend") -> lambda_.Function:
    """A user's own function, which the grants are for."""
    return lambda_.Function(
        stack,
        construct_id,
        runtime=lambda_.Runtime.PYTHON_3_12,
        handler="index.handler",
        code=lambda_.Code.from_inline("def handler(event, context):\n    return None\n"),
    )


# --- two instances in one stack ------------------------------------------------------------------


class TwoCounters:
    """One user stack holding two counters (the second on the account's API Gateway logging role:
    the region has one, and the first sets it) and a function of the user's granted each."""

    def __init__(self) -> None:
        app = new_app()
        self.stack = cdk.Stack(app, "Shop")
        self.orders = HybridCounter(self.stack, "Orders")
        self.projects = HybridCounter(
            self.stack,
            "Projects",
            HybridCounterProps(api_logs_role=ApiLogsRole.EXISTING, stream_batching_window_seconds=5),
        )
        self.orders_backend = backend_function(self.stack, "FirstBackend")
        self.projects_backend = backend_function(self.stack, "SecondBackend")
        self.orders.grant_tenant_access(self.orders_backend)
        self.projects.grant_tenant_access(self.projects_backend)
        for name, counter in (("Orders", self.orders), ("Projects", self.projects)):
            cdk.CfnOutput(self.stack, f"{name}ApiUrl", value=counter.api_url)
        self.template: dict[str, Any] = app.synth().get_stack_by_name("Shop").template


@pytest.fixture(scope="module")
def two() -> TwoCounters:
    return TwoCounters()


def counters(two: TwoCounters) -> Iterator[HybridCounter]:
    yield two.orders
    yield two.projects


def test_each_instance_counts_its_own_tables_stream_into_its_own_dead_letter_queues(two: TwoCounters) -> None:
    mappings = of_type(two.template, "AWS::Lambda::EventSourceMapping").values()
    for counter in counters(two):
        table_id = logical_id(counter.table)
        stream_sources = {
            m["Properties"]["FunctionName"]["Ref"]: m["Properties"]
            for m in mappings
            if m["Properties"]["EventSourceArn"] == {"Fn::GetAtt": [table_id, "StreamArn"]}
        }
        # the consumer's, the plan rollout's pager's and the event publisher's
        consumer_id, pager_id, publisher_id = sorted(stream_sources)
        assert consumer_id.startswith(f"{counter.node.id}Counting"), consumer_id
        assert pager_id.startswith(f"{counter.node.id}PlanRollout"), pager_id
        assert publisher_id.startswith(f"{counter.node.id}UsageEvents"), publisher_id
        assert stream_sources[consumer_id]["DestinationConfig"]["OnFailure"]["Destination"] == {
            "Fn::GetAtt": [logical_id(counter.dlq1), "Arn"]
        }
        assert stream_sources[publisher_id]["DestinationConfig"]["OnFailure"]["Destination"] == {
            "Fn::GetAtt": [logical_id(counter.events_dlq), "Arn"]
        }
        redrive_policy = two.template["Resources"][logical_id(counter.dlq1)]["Properties"]["RedrivePolicy"]
        assert redrive_policy["deadLetterTargetArn"] == {"Fn::GetAtt": [logical_id(counter.dlq2), "Arn"]}
        [redrive_source] = [
            m["Properties"]
            for m in mappings
            if m["Properties"]["EventSourceArn"] == {"Fn::GetAtt": [logical_id(counter.dlq1), "Arn"]}
        ]
        assert redrive_source["FunctionName"]["Ref"].startswith(f"{counter.node.id}DeadLetters")
    assert {logical_id(two.orders.table), logical_id(two.projects.table)} == set(
        of_type(two.template, "AWS::DynamoDB::Table")
    )


def test_each_instance_s_settings_are_its_own(two: TwoCounters) -> None:
    stream_sources = [
        m["Properties"]
        for m in of_type(two.template, "AWS::Lambda::EventSourceMapping").values()
        if "StartingPosition" in m["Properties"] and "Counting" in m["Properties"]["FunctionName"]["Ref"]
    ]
    windows = {
        counter.node.id: source["MaximumBatchingWindowInSeconds"]
        for counter in counters(two)
        for source in stream_sources
        if source["EventSourceArn"] == {"Fn::GetAtt": [logical_id(counter.table), "StreamArn"]}
    }
    assert windows == {"Orders": 0, "Projects": 5}
    [account] = of_type(two.template, "AWS::ApiGateway::Account").values()  # the region's one setting
    assert account["Properties"]["CloudWatchRoleArn"]["Fn::GetAtt"][0].startswith("OrdersApiRestApi")


def test_each_instance_s_roles_reach_its_own_api_only(two: TwoCounters) -> None:
    for counter, other in ((two.orders, two.projects), (two.projects, two.orders)):
        assert counter.tenant_role is not None
        assert counter.admin_role is not None
        for role in (counter.tenant_role, counter.admin_role):
            text = json.dumps(statements_of_role(two.template, logical_id(role)))
            assert logical_id(counter.api) in text
            assert logical_id(other.api) not in text
    assert two.stack.resolve(two.orders.api_url) != two.stack.resolve(two.projects.api_url)
    outputs = two.template["Outputs"]
    assert logical_id(two.orders.api) in json.dumps(outputs["OrdersApiUrl"])
    assert logical_id(two.projects.api) in json.dumps(outputs["ProjectsApiUrl"])


# Properties that name a resource physically: CloudFormation generates a unique name when they are
# absent; two set to the same value in one account and region fail the deploy.
NAME_PROPERTIES = {
    "AWS::Lambda::Function": "FunctionName",
    "AWS::Logs::LogGroup": "LogGroupName",
    "AWS::IAM::Role": "RoleName",
    "AWS::CloudWatch::Alarm": "AlarmName",
    "AWS::CloudWatch::Dashboard": "DashboardName",
    "AWS::CloudWatch::InsightRule": "RuleName",
    "AWS::SQS::Queue": "QueueName",
    "AWS::SNS::Topic": "TopicName",
    "AWS::DynamoDB::Table": "TableName",
    "AWS::Events::Rule": "Name",
}


def test_no_physical_name_is_fixed_but_those_unique_to_their_instance(two: TwoCounters) -> None:
    for resource_type, name_property in NAME_PROPERTIES.items():
        named = [
            resource["Properties"][name_property]
            for name, resource in of_type(two.template, resource_type).items()
            if name.startswith(("Orders", "Projects")) and name_property in resource["Properties"]
        ]
        if resource_type == "AWS::CloudWatch::InsightRule":
            assert sorted(named) == ["Shop-Orders-throttled-tenants", "Shop-Projects-throttled-tenants"]
        elif resource_type == "AWS::Logs::LogGroup":  # EventBridge writes to /aws/events/ log groups
            assert sorted(named) == ["/aws/events/Shop-Orders-usage", "/aws/events/Shop-Projects-usage"]
        else:
            assert named == [], resource_type
    # No output is exported (an export name is account- and region-wide). The construct's only
    # outputs are API Gateway's own endpoint output, one per API, unique in the stack.
    assert all("Export" not in output for output in two.template["Outputs"].values())
    assert sorted(name for name in two.template["Outputs"] if "Endpoint" not in name) == [
        "OrdersApiUrl",
        "ProjectsApiUrl",
    ]
    assert len(two.template["Outputs"]) == 4


# --- the grants -----------------------------------------------------------------------------------

REGION, ACCOUNT, API_ID = "eu-west-1", "111122223333", "abc123"


def resolved(template: dict[str, Any], value: Any) -> Any:
    """`value` with the intrinsic functions a policy uses resolved as CloudFormation would, every
    API of the template being API_ID."""
    refs = {
        "AWS::Partition": "aws",
        "AWS::Region": REGION,
        "AWS::AccountId": ACCOUNT,
        **dict.fromkeys(of_type(template, "AWS::ApiGateway::RestApi"), API_ID),
    }
    if isinstance(value, dict) and set(value) == {"Ref"}:
        return refs[value["Ref"]]
    if isinstance(value, dict) and set(value) == {"Fn::Join"}:
        separator, parts = value["Fn::Join"]
        return separator.join(str(resolved(template, part)) for part in parts)
    if isinstance(value, dict):
        return {key: resolved(template, inner) for key, inner in value.items()}
    if isinstance(value, list):
        return [resolved(template, inner) for inner in value]
    return value


def may_invoke(template: dict[str, Any], function: lambda_.Function, method: str, path: str) -> bool:
    """Whether the function's role may call `method` on `path`, by the local runtime's IAM evaluator
    (local/iam_policy.py) over the role's policies as synthesized."""
    role = function.role.node.default_child  # type: ignore[union-attr]
    policies = [{"Statement": resolved(template, statements_of_role(template, logical_id(role)))}]
    arn = execute_api_arn(REGION, ACCOUNT, API_ID, API_STAGE_NAME, method, path)
    return allowed(policies, "execute-api:Invoke", arn, {})


class Granted:
    """A counter and three functions of a user's, each given one grant."""

    def __init__(self) -> None:
        app = new_app()
        stack = cdk.Stack(app, "Saas")
        self.counter = HybridCounter(stack, "Limits")
        self.backend = backend_function(stack, "Backend")
        self.operator = backend_function(stack, "Operator")
        self.per_tenant = backend_function(stack, "PerTenant")
        self.counter.grant_tenant_access(self.backend)
        self.counter.grant_admin_access(self.operator)
        self.counter.grant_assume_tenant_role(self.per_tenant)
        self.template: dict[str, Any] = app.synth().get_stack_by_name("Saas").template


@pytest.fixture(scope="module")
def granted() -> Granted:
    return Granted()


# A backend acting for every tenant may call what any one tenant may, on every account; never set a limit.
SETTING_A_LIMIT = [(method, path) for method, path, _ in TENANT_ACME_PATHS if method == "PUT"]
TENANT_CALLS = [(method, path) for method, path, _ in TENANT_ACME_PATHS if method != "PUT"]
SET_A_LIMIT = SETTING_A_LIMIT[0]


def role_statements(template: dict[str, Any], function: lambda_.Function) -> list[dict[str, Any]]:
    return statements_of_role(template, logical_id(function.role.node.default_child))  # type: ignore[union-attr]


def test_grant_tenant_access_lets_a_function_call_every_tenant_s_paths_but_not_set_a_limit(granted: Granted) -> None:
    for method, path in TENANT_CALLS:
        assert may_invoke(granted.template, granted.backend, method, path), (method, path)
    for method, path in SETTING_A_LIMIT:
        assert not may_invoke(granted.template, granted.backend, method, path), (method, path)
    [statement] = role_statements(granted.template, granted.backend)
    assert statement["Action"] == "execute-api:Invoke"
    for arn in statement["Resource"]:
        assert {"Ref": logical_id(granted.counter.api)} in arn["Fn::Join"][1]


def test_grant_admin_access_lets_a_function_call_every_path_and_set_limits(granted: Granted) -> None:
    for method, path in [*TENANT_CALLS, *SETTING_A_LIMIT]:
        assert may_invoke(granted.template, granted.operator, method, path), (method, path)
    assert not may_invoke(granted.template, granted.per_tenant, *SET_A_LIMIT)


def test_grant_assume_tenant_role_lets_a_function_assume_it_with_a_tenant_tag_only(granted: Granted) -> None:
    statements = role_statements(granted.template, granted.per_tenant)
    assert granted.counter.tenant_role is not None
    tenant_role = {"Fn::GetAtt": [logical_id(granted.counter.tenant_role), "Arn"]}
    actions = {action for s in statements if s["Resource"] == tenant_role for action in as_list(s["Action"])}
    assert actions == {"sts:AssumeRole", "sts:TagSession"}
    # And nothing on the API itself: the tenant role's policy says which paths a tenant may call.
    assert "execute-api" not in json.dumps(statements)
    # The trust still asks for exactly one tenant tag (infra/access.py): the grant cannot widen it.
    [trust] = granted.template["Resources"][logical_id(granted.counter.tenant_role)]["Properties"][
        "AssumeRolePolicyDocument"
    ]["Statement"]
    assert trust["Condition"]["Null"] == {f"aws:RequestTag/{granted.counter.tenant_tag_key}": "false"}


def test_each_instance_s_grant_reaches_its_own_api_only(two: TwoCounters) -> None:
    for function, own, other in (
        (two.orders_backend, two.orders, two.projects),
        (two.projects_backend, two.projects, two.orders),
    ):
        text = json.dumps(role_statements(two.template, function))
        assert logical_id(own.api) in text
        assert logical_id(other.api) not in text


def test_with_jwt_authorization_there_is_no_iam_access_to_grant() -> None:
    stack = cdk.Stack(new_app(), "Tokens")
    counter = HybridCounter(
        stack, "Limits", HybridCounterProps(authorization=JwtAuthorization("https://issuer.example.com/", "counter"))
    )
    assert (counter.tenant_role, counter.admin_role) == (None, None)
    for grant in (counter.grant_tenant_access, counter.grant_admin_access, counter.grant_assume_tenant_role):
        with pytest.raises(ValueError, match="JwtAuthorization"):
            grant(backend_function(stack, f"Backend{grant.__name__}"))


# --- the trust and the props -------------------------------------------------------------------------


BACKEND_ROLE = "arn:aws:iam::111122223333:role/saas-backend"
OPERATORS_ROLE = "arn:aws:iam::111122223333:role/operators"


def test_the_roles_trust_whom_the_user_names_and_the_tenant_role_keeps_its_tag_rules() -> None:
    app = new_app()
    stack = cdk.Stack(app, "Trusting")
    counter = HybridCounter(
        stack,
        "Limits",
        HybridCounterProps(
            authorization=IamAuthorization(
                tenant_role_trusted_by=iam.ArnPrincipal(BACKEND_ROLE),
                admin_role_trusted_by=iam.ArnPrincipal(OPERATORS_ROLE),
            )
        ),
    )
    template = app.synth().get_stack_by_name("Trusting").template
    assert counter.tenant_role is not None
    assert counter.admin_role is not None

    def trust(role: iam.IRole) -> dict[str, Any]:
        [statement] = template["Resources"][logical_id(role)]["Properties"]["AssumeRolePolicyDocument"]["Statement"]
        return dict(statement)

    tenant, admin = trust(counter.tenant_role), trust(counter.admin_role)
    assert json.dumps(tenant["Principal"]) == json.dumps({"AWS": BACKEND_ROLE})
    assert sorted(tenant["Action"]) == ["sts:AssumeRole", "sts:TagSession"]
    assert tenant["Condition"]["Null"] == {"aws:RequestTag/tenant": "false"}
    assert tenant["Condition"]["ForAllValues:StringEquals"] == {"aws:TagKeys": ["tenant"]}
    assert json.dumps(admin["Principal"]) == json.dumps({"AWS": OPERATORS_ROLE})


def test_the_roles_trust_the_deploying_account_by_default(template_json: dict[str, Any]) -> None:
    for role_id in ("AccessTenantRoleE280B929", "AccessAdminRoleE47DCFEF"):
        [statement] = template_json["Resources"][role_id]["Properties"]["AssumeRolePolicyDocument"]["Statement"]
        assert "AWS::AccountId" in json.dumps(statement["Principal"])


def test_a_trusted_principal_keeps_its_own_conditions_beside_the_tenant_role_s() -> None:
    app = new_app()
    stack = cdk.Stack(app, "Mfa")
    mfa = {"Bool": {"aws:MultiFactorAuthPresent": "true"}}
    counter = HybridCounter(
        stack,
        "Limits",
        HybridCounterProps(
            authorization=IamAuthorization(
                tenant_role_trusted_by=iam.PrincipalWithConditions(iam.ArnPrincipal(BACKEND_ROLE), mfa),
                admin_role_trusted_by=iam.PrincipalWithConditions(iam.ArnPrincipal(OPERATORS_ROLE), mfa),
            )
        ),
    )
    template = app.synth().get_stack_by_name("Mfa").template
    assert counter.tenant_role is not None
    assert counter.admin_role is not None

    def trust(role: iam.IRole) -> dict[str, Any]:
        [statement] = template["Resources"][logical_id(role)]["Properties"]["AssumeRolePolicyDocument"]["Statement"]
        return dict(statement)

    assert trust(counter.admin_role)["Condition"] == mfa
    tenant = trust(counter.tenant_role)
    assert tenant["Condition"]["Bool"] == mfa["Bool"]
    assert tenant["Condition"]["Null"] == {"aws:RequestTag/tenant": "false"}
    assert json.dumps(tenant["Principal"]) == json.dumps({"AWS": BACKEND_ROLE})


def synthesized(props: HybridCounterProps) -> dict[str, Any]:
    app = new_app()
    HybridCounter(cdk.Stack(app, "User"), "Limits", props)
    template: dict[str, Any] = app.synth().get_stack_by_name("User").template
    return template


def one(template: dict[str, Any], resource_type: str) -> dict[str, Any]:
    [resource] = of_type(template, resource_type).values()
    return resource


RESTORED_STREAM = "arn:aws:dynamodb:eu-west-1:111122223333:table/restored/stream/2026-11-23T00:00:00.000"


def test_the_defaults_keep_the_data_and_send_alarms_to_no_one() -> None:
    template = synthesized(HybridCounterProps())
    table = one(template, "AWS::DynamoDB::Table")
    assert (table["DeletionPolicy"], table["Properties"]["DeletionProtectionEnabled"]) == ("Retain", True)
    assert of_type(template, "AWS::SNS::Subscription") == {}
    assert one(template, "AWS::ApiGateway::Account")  # the region's logging role, set by default


def test_each_prop_reaches_the_template() -> None:
    template = synthesized(
        HybridCounterProps(
            alarm_email="ops@example.com",
            removal_policy=cdk.RemovalPolicy.DESTROY,
            stream_batching_window_seconds=9,
            stream_parallelization_factor=4,
            api_rate_limit=70,
            api_burst_limit=30,
            table_max_write_request_units=500,
            api_logs_role=ApiLogsRole.NONE,
            architecture=lambda_.Architecture.X86_64,
        )
    )
    subscription = one(template, "AWS::SNS::Subscription")["Properties"]
    assert (subscription["Protocol"], subscription["Endpoint"]) == ("email", "ops@example.com")
    table = one(template, "AWS::DynamoDB::Table")
    assert table["DeletionPolicy"] == "Delete"
    assert table["Properties"]["DeletionProtectionEnabled"] is False
    assert table["Properties"]["OnDemandThroughput"] == {"MaxWriteRequestUnits": 500}
    assert {r["DeletionPolicy"] for r in of_type(template, "AWS::SQS::Queue").values()} == {"Delete"}
    [stream] = [
        m["Properties"]
        for m in of_type(template, "AWS::Lambda::EventSourceMapping").values()
        if "StartingPosition" in m["Properties"] and "Counting" in m["Properties"]["FunctionName"]["Ref"]
    ]
    assert (stream["MaximumBatchingWindowInSeconds"], stream["ParallelizationFactor"]) == (9, 4)
    [settings] = one(template, "AWS::ApiGateway::Stage")["Properties"]["MethodSettings"]
    assert (settings["ThrottlingRateLimit"], settings["ThrottlingBurstLimit"]) == (70, 30)
    assert of_type(template, "AWS::ApiGateway::Account") == {}
    assert {tuple(f["Properties"]["Architectures"]) for f in of_type(template, "AWS::Lambda::Function").values()} == {
        ("x86_64",)
    }


def test_jwt_authorization_puts_a_token_authorizer_on_every_method_and_makes_no_roles() -> None:
    template = synthesized(
        HybridCounterProps(authorization=JwtAuthorization("https://issuer.example.com/", "counter", tenant_claim="org"))
    )
    authorizer = one(template, "AWS::ApiGateway::Authorizer")["Properties"]
    assert authorizer["Type"] == "TOKEN"
    methods = of_type(template, "AWS::ApiGateway::Method").values()
    assert {m["Properties"]["AuthorizationType"] for m in methods if m["Properties"]["HttpMethod"] != "OPTIONS"} == {
        "CUSTOM"
    }
    variables = [
        f["Properties"]["Environment"]["Variables"]
        for f in of_type(template, "AWS::Lambda::Function").values()
        if "JWT_ISSUER" in json.dumps(f["Properties"].get("Environment", {}))
    ]
    assert len(variables) == 1
    assert "org" in json.dumps(variables)
    assert not [r for r in of_type(template, "AWS::IAM::Role") if r.startswith("LimitsAccess")]


def test_an_existing_table_is_used_and_not_created() -> None:
    template = synthesized(
        HybridCounterProps(
            existing_table=ExistingTable("restored", RESTORED_STREAM), api_logs_role=ApiLogsRole.EXISTING
        )
    )
    assert of_type(template, "AWS::DynamoDB::Table") == {}
    sources = [m["Properties"]["EventSourceArn"] for m in of_type(template, "AWS::Lambda::EventSourceMapping").values()]
    assert RESTORED_STREAM in sources


def test_an_existing_event_bus_takes_the_usage_events_and_none_is_created() -> None:
    app = new_app()
    stack = cdk.Stack(app, "User")
    mine = events.EventBus.from_event_bus_arn(stack, "Mine", "arn:aws:events:eu-west-1:111122223333:event-bus/mine")
    counter = HybridCounter(stack, "Limits", HybridCounterProps(event_bus=mine))
    assert counter.event_bus is mine
    template = app.synth().get_stack_by_name("User").template
    assert of_type(template, "AWS::Events::EventBus") == {}
    [publisher] = [f for f in of_type(template, "AWS::Lambda::Function").values() if "EVENT_BUS_NAME" in json.dumps(f)]
    assert publisher["Properties"]["Environment"]["Variables"]["EVENT_BUS_NAME"] == "mine"
    rules = of_type(template, "AWS::Events::Rule").values()
    assert any(rule["Properties"].get("EventBusName") == "mine" for rule in rules)


@pytest.mark.parametrize(
    ("props", "field"),
    [
        ({"stream_batching_window_seconds": 301}, "stream_batching_window_seconds"),
        ({"stream_parallelization_factor": 0}, "stream_parallelization_factor"),
        ({"stream_parallelization_factor": 11}, "stream_parallelization_factor"),
        ({"api_rate_limit": 0}, "api_rate_limit"),
        ({"api_burst_limit": -1}, "api_burst_limit"),
        ({"idempotency_window_seconds": 60}, "idempotency_window_seconds"),
        ({"table_max_write_request_units": 0}, "table_max_write_request_units"),
        ({"removal_policy": cdk.RemovalPolicy.SNAPSHOT}, "removal_policy"),
        ({"alarm_email": ""}, "alarm_email"),
    ],
)
def test_props_outside_what_aws_or_the_design_allows_are_refused_by_name(props: dict[str, Any], field: str) -> None:
    with pytest.raises(ValueError, match=f"HybridCounterProps.{field} "):
        HybridCounterProps(**props)


@pytest.mark.parametrize(
    ("given", "field"),
    [
        ({"issuer": "http://issuer.example.com", "audience": "a"}, "issuer"),
        ({"issuer": "https://issuer.example.com", "audience": ""}, "audience"),
    ],
)
def test_jwt_authorization_needs_an_https_issuer_and_an_audience(given: dict[str, str], field: str) -> None:
    with pytest.raises(ValueError, match=f"JwtAuthorization.{field} "):
        JwtAuthorization(**given)


def test_an_existing_table_needs_its_stream_arn() -> None:
    with pytest.raises(ValueError, match=r"ExistingTable\.stream_arn "):
        ExistingTable(name="restored", stream_arn="arn:nope")


# --- inside a user's Stage --------------------------------------------------------------------------


def test_the_construct_in_two_stages_of_a_user_s_app_synthesizes_apart() -> None:
    app = new_app()
    stages = [cdk.Stage(app, name) for name in ("Staging", "Prod")]
    for stage in stages:
        HybridCounter(cdk.Stack(stage, "Limits"), "Counter")
    templates = {
        stage.stage_name: stage.synth().get_stack_by_name(f"{stage.stage_name}-Limits").template for stage in stages
    }
    for name, template in templates.items():
        [rule] = of_type(template, "AWS::CloudWatch::InsightRule").values()
        assert rule["Properties"]["RuleName"] == f"{name}-Limits-Counter-throttled-tenants"
        groups = of_type(template, "AWS::Logs::LogGroup").values()
        [log_group] = [group for group in groups if "LogGroupName" in group["Properties"]]
        assert log_group["Properties"]["LogGroupName"] == f"/aws/events/{name}-Limits-Counter-usage"
        assert len(of_type(template, "AWS::Lambda::Function")) == 9


# --- the app's stack is one use of it ---------------------------------------------------------------

# The logical ids a deployed stack holds (CloudFormation replaces a resource whose id changes): the
# construct is the app stack's `Default` child, which CDK leaves out of logical ids.
DEPLOYED_IDS = {
    "AWS::DynamoDB::Table": {"DataTableFDBAD0F2"},
    "AWS::SQS::Queue": {"DeadLettersRedriveFailureQueueEEDC906A", "DeadLettersStreamFailureQueue7DC726BA"},
    "AWS::Lambda::Function": {
        "ApiApiFunctionAA82C666",
        "CountingStreamConsumerFunctionCC05A98C",
        "DeadLettersRedriveFunction17C6C4EB",
        "SweeperSweeperFunctionB9357A44",
    },
    "AWS::IAM::Role": {
        "AccessAdminRoleE47DCFEF",
        "AccessTenantRoleE280B929",
        "ApiApiFunctionRole0D8DD955",
        "ApiRestApiCloudWatchRoleB7879BFC",
        "CountingStreamConsumerFunctionRole8EDD890E",
        "DeadLettersRedriveFunctionRole21D6CCB5",
        "SweeperSweeperFunctionRoleAA864C52",
    },
    "AWS::ApiGateway::RestApi": {"ApiRestApiE35FEAFE"},
    "AWS::CloudWatch::InsightRule": {"MonitoringThrottledTenants1AF81985"},
}


# Added since: the usage events' (infra/usage_events.py), the refusals' and the plan rollout's.
ADDED_IDS = {
    "AWS::SQS::Queue": {
        "UsageEventsEventsFailureQueueCBF9EB51",
        "LimitRefusalsRefusedWindowsQueue552B6065",
        "LimitRefusalsRefusalsFailureQueueF5ECED86",
        "PlanRolloutRolloutQueue00C2FC10",
        "PlanRolloutRolloutFailureQueue3B80E217",
    },
    "AWS::Lambda::Function": {
        "UsageEventsEventPublisherFunction13156913",
        "LimitRefusalsRefusalAggregatorFunction1AF43950",
        "LimitRefusalsRefusalEmitterFunctionD95BFBE9",
        "PlanRolloutPlanPagerFunction351B9A9F",
        "PlanRolloutPlanWorkerFunctionF57C3CE9",
    },
    "AWS::IAM::Role": {
        "UsageEventsEventPublisherFunctionRole117186DE",
        "LimitRefusalsRefusalAggregatorFunctionRole656F28BC",
        "LimitRefusalsRefusalEmitterFunctionRole664B4D56",
        "PlanRolloutPlanPagerFunctionRoleF36B7F3D",
        "PlanRolloutPlanWorkerFunctionRole9E25DB08",
    },
}


@pytest.mark.parametrize("resource_type", sorted(DEPLOYED_IDS))
def test_the_app_s_stack_keeps_the_logical_ids_of_the_deployed_stack(resource_type: str) -> None:
    added = ADDED_IDS.get(resource_type, set())
    assert set(of_type(synth_template_json(), resource_type)) == DEPLOYED_IDS[resource_type] | added


def test_the_app_s_stack_keeps_its_output_names_and_its_insight_rule_name(template_json: dict[str, Any]) -> None:
    [rule] = of_type(template_json, "AWS::CloudWatch::InsightRule").values()
    assert rule["Properties"]["RuleName"] == f"{DEFAULT_STACK_NAME}-throttled-tenants"
    assert OUTPUT_API_URL in template_json["Outputs"]
