"""The synthesized template carries the settings the counting design depends on."""

from __future__ import annotations

import json
import re
from typing import Any

import pytest
from aws_cdk.assertions import Template

from functions.adapters import table_layout
from functions.core.rate_limits import TENANT_LOG_KEY, THROTTLED_TENANT_MESSAGE
from functions.shared.config import FunctionEnvironment
from infra import options
from infra.access import ADMIN_ROLE_ID, TENANT_ROLE_ID
from infra.api import API_STAGE_NAME
from infra.bundling import LAMBDA_RUNTIME
from infra.counting import STREAM_BATCH_SIZE, STREAM_MAX_RECORD_AGE_SECONDS, STREAM_MAX_RETRY_ATTEMPTS
from infra.dead_letters import DLQ1_MAX_RECEIVE_COUNT, REDRIVE_BATCH_SIZE
from infra.function_settings import (
    API_FUNCTION,
    AUTHORIZER_FUNCTION,
    EVENT_PUBLISHER_FUNCTION,
    LOG_LEVEL,
    PLAN_PAGER_FUNCTION,
    PLAN_WORKER_FUNCTION,
    POWERTOOLS_METRICS_NAMESPACE,
    REDRIVE_FUNCTION,
    REFUSAL_AGGREGATOR_FUNCTION,
    REFUSAL_EMITTER_FUNCTION,
    STREAM_CONSUMER_FUNCTION,
    SWEEPER_FUNCTION,
)
from infra.jwt_authorizer import AUTHORIZER_CACHE_SECONDS
from infra.outputs import (
    OUTPUT_ADMIN_ROLE_ARN,
    OUTPUT_ALARM_TOPIC_ARN,
    OUTPUT_API_URL,
    OUTPUT_DLQ1_URL,
    OUTPUT_DLQ2_ALARM_NAME,
    OUTPUT_DLQ2_URL,
    OUTPUT_EVENT_BUS_ARN,
    OUTPUT_EVENT_BUS_NAME,
    OUTPUT_EVENTS_DLQ_ALARM_NAME,
    OUTPUT_EVENTS_DLQ_URL,
    OUTPUT_EVENTS_LOG_GROUP,
    OUTPUT_STREAM_ARN,
    OUTPUT_TABLE_NAME,
    OUTPUT_TENANT_ROLE_ARN,
    OUTPUT_TENANT_TAG_KEY,
    TENANT_TAG_KEY,
)
from infra.synth import synth_template_json, synthesize_stack_template
from local.iam_policy import string_like
from tests.support.tenant_tags import ACCOUNT_ID_TAGS, HOSTILE_TENANT_TAGS

pytestmark = pytest.mark.infra

Resources = dict[str, dict[str, Any]]


def resources_of_type(template_json: dict[str, Any], resource_type: str) -> Resources:
    return {
        logical_id: resource
        for logical_id, resource in template_json["Resources"].items()
        if resource["Type"] == resource_type
    }


def only(resources: Resources) -> tuple[str, dict[str, Any]]:
    assert len(resources) == 1, f"expected exactly one match, got {sorted(resources)}"
    return next(iter(resources.items()))


def table(template_json: dict[str, Any]) -> tuple[str, dict[str, Any]]:
    return only(resources_of_type(template_json, "AWS::DynamoDB::Table"))


def function_by_handler(template_json: dict[str, Any], handler: str) -> tuple[str, dict[str, Any]]:
    return only(
        {
            logical_id: resource
            for logical_id, resource in resources_of_type(template_json, "AWS::Lambda::Function").items()
            if resource["Properties"]["Handler"] == handler
        }
    )


def queue_id_by_output(template_json: dict[str, Any], output_name: str) -> str:
    # Queue URL outputs are {"Ref": <queue logical id>}: the outputs tell which queue is which.
    return str(template_json["Outputs"][output_name]["Value"]["Ref"])


def event_source_mapping_of(template_json: dict[str, Any], function_id: str) -> dict[str, Any]:
    _, mapping = only(
        {
            logical_id: resource
            for logical_id, resource in resources_of_type(template_json, "AWS::Lambda::EventSourceMapping").items()
            if resource["Properties"]["FunctionName"] == {"Ref": function_id}
        }
    )
    properties: dict[str, Any] = mapping["Properties"]
    return properties


# --- table -------------------------------------------------------------------------------------


def test_table_keys_come_from_the_shared_schema(template_json: dict[str, Any]) -> None:
    _, resource = table(template_json)
    properties = resource["Properties"]
    assert properties["KeySchema"] == [
        {"AttributeName": table_layout.PARTITION_KEY, "KeyType": "HASH"},
        {"AttributeName": table_layout.SORT_KEY, "KeyType": "RANGE"},
    ]
    attribute_types = {a["AttributeName"]: a["AttributeType"] for a in properties["AttributeDefinitions"]}
    assert attribute_types[table_layout.PARTITION_KEY] == "S"
    assert attribute_types[table_layout.SORT_KEY] == "S"


def test_table_is_on_demand_with_stream_images_and_point_in_time_recovery(template: Template) -> None:
    template.has_resource_properties(
        "AWS::DynamoDB::Table",
        {
            "BillingMode": "PAY_PER_REQUEST",
            "StreamSpecification": {"StreamViewType": "NEW_AND_OLD_IMAGES"},
            "PointInTimeRecoverySpecification": {"PointInTimeRecoveryEnabled": True},
        },
    )


def test_tombstones_expire_by_ttl_on_the_shared_attribute(template_json: dict[str, Any]) -> None:
    _, resource = table(template_json)
    assert resource["Properties"]["TimeToLiveSpecification"] == {
        "AttributeName": table_layout.EXPIRES_AT,
        "Enabled": True,
    }


def test_sparse_pending_index_matches_the_schema(template_json: dict[str, Any]) -> None:
    _, resource = table(template_json)
    properties = resource["Properties"]
    (index,) = [
        gsi for gsi in properties["GlobalSecondaryIndexes"] if gsi["IndexName"] == table_layout.PENDING_INDEX.name
    ]
    assert index["KeySchema"] == [
        {"AttributeName": table_layout.PENDING_BUCKET, "KeyType": "HASH"},
        {"AttributeName": table_layout.PENDING_SINCE, "KeyType": "RANGE"},
    ]
    assert index["Projection"]["ProjectionType"] == "INCLUDE"
    assert sorted(index["Projection"]["NonKeyAttributes"]) == sorted(table_layout.PENDING_INDEX.projected)
    attribute_types = {a["AttributeName"]: a["AttributeType"] for a in properties["AttributeDefinitions"]}
    assert attribute_types[table_layout.PENDING_BUCKET] == "S"
    assert attribute_types[table_layout.PENDING_SINCE] == "S"


def test_stateful_resources_are_retained_by_default(template_json: dict[str, Any]) -> None:
    _, resource = table(template_json)
    assert resource["DeletionPolicy"] == "Retain"
    assert resource["Properties"]["DeletionProtectionEnabled"] is True  # nor deleted by hand, by accident
    assert resource["UpdateReplacePolicy"] == "Retain"
    for queue in resources_of_type(template_json, "AWS::SQS::Queue").values():
        assert queue["DeletionPolicy"] == "Retain"


@pytest.mark.parametrize("value", ["destroy", "DESTROY"])
def test_removal_policy_destroy_deletes_stateful_resources(value: str) -> None:
    template_json = synthesize_stack_template({options.REMOVAL_POLICY.key: value})
    _, resource = table(template_json)
    assert resource["DeletionPolicy"] == "Delete"
    assert resource["Properties"].get("DeletionProtectionEnabled") is False
    for stateful_type in ("AWS::SQS::Queue", "AWS::Logs::LogGroup"):
        for stateful in resources_of_type(template_json, stateful_type).values():
            assert stateful["DeletionPolicy"] == "Delete"


def test_unknown_removal_policy_is_rejected_with_the_allowed_values() -> None:
    with pytest.raises(ValueError, match=r'"retain", "destroy".*snapshot'):
        synthesize_stack_template({options.REMOVAL_POLICY.key: "snapshot"})


# --- stream consumer ---------------------------------------------------------------------------


def test_stream_event_source_settings(template_json: dict[str, Any]) -> None:
    consumer_id, _ = function_by_handler(template_json, STREAM_CONSUMER_FUNCTION.handler)
    table_id, _ = table(template_json)
    dlq1_id = queue_id_by_output(template_json, OUTPUT_DLQ1_URL)

    mapping = event_source_mapping_of(template_json, consumer_id)

    assert mapping["EventSourceArn"] == {"Fn::GetAtt": [table_id, "StreamArn"]}
    assert mapping["StartingPosition"] == "TRIM_HORIZON"
    assert mapping["BatchSize"] == STREAM_BATCH_SIZE == 100
    assert mapping["FunctionResponseTypes"] == ["ReportBatchItemFailures"]
    assert mapping["BisectBatchOnFunctionError"] is True
    assert mapping["MaximumRetryAttempts"] == STREAM_MAX_RETRY_ATTEMPTS == 5
    assert mapping["MaximumRecordAgeInSeconds"] == STREAM_MAX_RECORD_AGE_SECONDS == 3600
    assert mapping["ParallelizationFactor"] == 1
    assert mapping["DestinationConfig"] == {"OnFailure": {"Destination": {"Fn::GetAtt": [dlq1_id, "Arn"]}}}


def test_the_stream_batching_window_is_off_by_default_and_set_by_context(template_json: dict[str, Any]) -> None:
    consumer_id, _ = function_by_handler(template_json, STREAM_CONSUMER_FUNCTION.handler)
    assert event_source_mapping_of(template_json, consumer_id).get("MaximumBatchingWindowInSeconds", 0) == 0
    windowed = synthesize_stack_template({options.STREAM_BATCHING_WINDOW.key: "2"})
    consumer_id, _ = function_by_handler(windowed, STREAM_CONSUMER_FUNCTION.handler)
    assert event_source_mapping_of(windowed, consumer_id)["MaximumBatchingWindowInSeconds"] == 2


def test_the_consumers_parallelization_factor_is_one_unless_the_deployer_sets_it() -> None:
    chosen = synthesize_stack_template({options.STREAM_PARALLELIZATION.key: "4"})
    consumer_id, _ = function_by_handler(chosen, STREAM_CONSUMER_FUNCTION.handler)
    assert event_source_mapping_of(chosen, consumer_id)["ParallelizationFactor"] == 4
    for value in ("0", "11"):
        with pytest.raises(ValueError, match="streamParallelizationFactor"):
            synthesize_stack_template({options.STREAM_PARALLELIZATION.key: value})


@pytest.mark.parametrize("value", ["-1", "301", "1.5", "soon"])
def test_a_stream_batching_window_outside_lambdas_range_is_rejected(value: str) -> None:
    with pytest.raises(ValueError, match=r"streamBatchingWindowSeconds.*0 to 300"):
        synthesize_stack_template({options.STREAM_BATCHING_WINDOW.key: value})


def test_stream_filters_are_the_schema_patterns(template_json: dict[str, Any]) -> None:
    consumer_id, _ = function_by_handler(template_json, STREAM_CONSUMER_FUNCTION.handler)
    mapping = event_source_mapping_of(template_json, consumer_id)

    patterns = [json.loads(f["Pattern"]) for f in mapping["FilterCriteria"]["Filters"]]

    # Round-trip through JSON on the expected side too: the schema may use tuples.
    assert patterns == [json.loads(json.dumps(p)) for p in table_layout.STREAM_FILTER_PATTERNS]


# --- dead letters and redrive ------------------------------------------------------------------


def test_dlq1_redrives_to_dlq2_after_bounded_receives(template_json: dict[str, Any]) -> None:
    dlq1_id = queue_id_by_output(template_json, OUTPUT_DLQ1_URL)
    dlq2_id = queue_id_by_output(template_json, OUTPUT_DLQ2_URL)
    dlq1 = template_json["Resources"][dlq1_id]["Properties"]

    assert dlq1["RedrivePolicy"] == {
        "deadLetterTargetArn": {"Fn::GetAtt": [dlq2_id, "Arn"]},
        "maxReceiveCount": DLQ1_MAX_RECEIVE_COUNT,
    }
    assert DLQ1_MAX_RECEIVE_COUNT == 5


def test_dlq1_visibility_covers_six_redrive_timeouts(template_json: dict[str, Any]) -> None:
    dlq1_id = queue_id_by_output(template_json, OUTPUT_DLQ1_URL)
    _, redrive = function_by_handler(template_json, REDRIVE_FUNCTION.handler)

    visibility_timeout = template_json["Resources"][dlq1_id]["Properties"]["VisibilityTimeout"]

    assert redrive["Properties"]["Timeout"] == REDRIVE_FUNCTION.timeout_seconds
    assert visibility_timeout >= 6 * redrive["Properties"]["Timeout"]


DEAD_LETTER_QUEUES = [OUTPUT_DLQ1_URL, OUTPUT_DLQ2_URL, OUTPUT_EVENTS_DLQ_URL]


@pytest.mark.parametrize("output_name", DEAD_LETTER_QUEUES)
def test_dead_letter_queues_are_encrypted_and_kept_two_weeks(template_json: dict[str, Any], output_name: str) -> None:
    queue = template_json["Resources"][queue_id_by_output(template_json, output_name)]["Properties"]
    assert queue["SqsManagedSseEnabled"] is True
    assert queue["MessageRetentionPeriod"] == 14 * 24 * 3600 == 1209600


@pytest.mark.parametrize("output_name", DEAD_LETTER_QUEUES)
def test_dead_letter_queues_refuse_plain_http(template_json: dict[str, Any], output_name: str) -> None:
    queue_id = queue_id_by_output(template_json, output_name)
    policies = [
        policy["Properties"]
        for policy in resources_of_type(template_json, "AWS::SQS::QueuePolicy").values()
        if {"Ref": queue_id} in policy["Properties"]["Queues"]
    ]
    statements = [s for policy in policies for s in policy["PolicyDocument"]["Statement"]]
    assert any(
        s["Effect"] == "Deny" and s["Condition"] == {"Bool": {"aws:SecureTransport": "false"}} for s in statements
    )


def test_alarm_fires_on_first_message_in_dlq2(template_json: dict[str, Any]) -> None:
    dlq2_id = queue_id_by_output(template_json, OUTPUT_DLQ2_URL)
    alarm_id = template_json["Outputs"][OUTPUT_DLQ2_ALARM_NAME]["Value"]["Ref"]
    properties = resources_of_type(template_json, "AWS::CloudWatch::Alarm")[alarm_id]["Properties"]

    assert template_json["Outputs"][OUTPUT_DLQ2_ALARM_NAME]["Value"] == {"Ref": alarm_id}
    assert properties["Namespace"] == "AWS/SQS"
    assert properties["MetricName"] == "ApproximateNumberOfMessagesVisible"
    assert properties["Dimensions"] == [{"Name": "QueueName", "Value": {"Fn::GetAtt": [dlq2_id, "QueueName"]}}]
    assert properties["ComparisonOperator"] == "GreaterThanOrEqualToThreshold"
    assert properties["Threshold"] == 1
    assert properties["EvaluationPeriods"] == 1
    assert properties["DatapointsToAlarm"] == 1
    assert properties["Period"] == 60
    assert properties["TreatMissingData"] == "notBreaching"


def test_redrive_consumes_dlq1_reporting_item_failures(template_json: dict[str, Any]) -> None:
    redrive_id, _ = function_by_handler(template_json, REDRIVE_FUNCTION.handler)
    dlq1_id = queue_id_by_output(template_json, OUTPUT_DLQ1_URL)

    mapping = event_source_mapping_of(template_json, redrive_id)

    assert mapping["EventSourceArn"] == {"Fn::GetAtt": [dlq1_id, "Arn"]}
    assert mapping["BatchSize"] == REDRIVE_BATCH_SIZE
    assert mapping["FunctionResponseTypes"] == ["ReportBatchItemFailures"]


# --- functions ---------------------------------------------------------------------------------

ALL_HANDLERS = (
    API_FUNCTION.handler,
    STREAM_CONSUMER_FUNCTION.handler,
    REDRIVE_FUNCTION.handler,
    SWEEPER_FUNCTION.handler,
    EVENT_PUBLISHER_FUNCTION.handler,
    REFUSAL_AGGREGATOR_FUNCTION.handler,
    REFUSAL_EMITTER_FUNCTION.handler,
    PLAN_PAGER_FUNCTION.handler,
    PLAN_WORKER_FUNCTION.handler,
)
EXPECTED_TIMEOUTS = {
    API_FUNCTION.handler: 10,
    STREAM_CONSUMER_FUNCTION.handler: 30,
    REDRIVE_FUNCTION.handler: 60,
    SWEEPER_FUNCTION.handler: 300,
    EVENT_PUBLISHER_FUNCTION.handler: 30,
    REFUSAL_AGGREGATOR_FUNCTION.handler: 30,
    REFUSAL_EMITTER_FUNCTION.handler: 30,
    PLAN_PAGER_FUNCTION.handler: 60,
    PLAN_WORKER_FUNCTION.handler: 60,
}
SWEEPER_ENVIRONMENT = {
    FunctionEnvironment.variable("pending_older_than"): "300",
    FunctionEnvironment.variable("quiet"): "60",
    FunctionEnvironment.variable("lookback"): "21600",
}


# The quiet period too: a write that sees many dead leases judges them dead as the sweeper does.
API_ENVIRONMENT = {
    FunctionEnvironment.variable("tenant_rate_limit"): "1000",
    FunctionEnvironment.variable("tenant_window_seconds"): "2",
    FunctionEnvironment.variable("quiet"): "60",
}


def publisher_environment(template_json: dict[str, Any]) -> dict[str, Any]:
    """The bus the publisher puts events on: the stack's."""
    [bus_id] = resources_of_type(template_json, "AWS::Events::EventBus")
    return {FunctionEnvironment.variable("event_bus_name"): {"Ref": bus_id}}


def aggregator_environment(template_json: dict[str, Any]) -> dict[str, Any]:
    [queue_id] = [q for q in resources_of_type(template_json, "AWS::SQS::Queue") if "RefusedWindows" in q]
    return {FunctionEnvironment.variable("refusal_queue_url"): {"Ref": queue_id}}


ROLLOUT_HANDLERS = (PLAN_PAGER_FUNCTION.handler, PLAN_WORKER_FUNCTION.handler)


def rollout_environment(template_json: dict[str, Any]) -> dict[str, Any]:
    [queue_id] = [q for q in resources_of_type(template_json, "AWS::SQS::Queue") if "RolloutRolloutQueue" in q]
    return {FunctionEnvironment.variable("rollout_queue_url"): {"Ref": queue_id}}


@pytest.mark.parametrize("handler", ALL_HANDLERS)
def test_function_runtime_architecture_and_shared_settings(template_json: dict[str, Any], handler: str) -> None:
    table_id, _ = table(template_json)
    _, function = function_by_handler(template_json, handler)
    properties = function["Properties"]

    assert properties["Runtime"] == LAMBDA_RUNTIME.name == "python3.12"
    assert properties["Architectures"] == [options.ARCHITECTURE.default] == ["arm64"]
    assert properties["Timeout"] == EXPECTED_TIMEOUTS[handler]
    assert properties["TracingConfig"] == {"Mode": "Active"}
    assert properties["Environment"]["Variables"] == {
        FunctionEnvironment.variable("table_name"): {"Ref": table_id},
        "POWERTOOLS_SERVICE_NAME": "hybrid-counter",
        "POWERTOOLS_METRICS_NAMESPACE": "HybridCounter",
        "POWERTOOLS_LOG_LEVEL": LOG_LEVEL,
        # Answers, records and errors carry tenants' data: none in X-Ray's metadata (docs/security.md).
        "POWERTOOLS_TRACER_CAPTURE_RESPONSE": "false",
        "POWERTOOLS_TRACER_CAPTURE_ERROR": "false",
        FunctionEnvironment.variable("tombstone_retention"): str(options.IDEMPOTENCY_WINDOW.default),
        **(SWEEPER_ENVIRONMENT if handler == SWEEPER_FUNCTION.handler else {}),
        **(API_ENVIRONMENT if handler == API_FUNCTION.handler else {}),
        **(publisher_environment(template_json) if handler == EVENT_PUBLISHER_FUNCTION.handler else {}),
        **(aggregator_environment(template_json) if handler == REFUSAL_AGGREGATOR_FUNCTION.handler else {}),
        **(rollout_environment(template_json) if handler in ROLLOUT_HANDLERS else {}),
    }
    log_group_id = properties["LoggingConfig"]["LogGroup"]["Ref"]
    assert template_json["Resources"][log_group_id]["Properties"]["RetentionInDays"] == 30


def function_architectures(template_json: dict[str, Any]) -> dict[str, list[str]]:
    functions = resources_of_type(template_json, "AWS::Lambda::Function")
    assert len(functions) == len(ALL_HANDLERS)
    return {logical_id: function["Properties"]["Architectures"] for logical_id, function in functions.items()}


def test_all_functions_default_to_arm64(template_json: dict[str, Any]) -> None:
    architectures = function_architectures(template_json)
    assert set(map(tuple, architectures.values())) == {("arm64",)}, architectures


@pytest.mark.parametrize("value", ["x86_64", " X86_64 "])
def test_architecture_context_switches_every_function(value: str) -> None:
    template_json = synthesize_stack_template({options.ARCHITECTURE.key: value})
    architectures = function_architectures(template_json)
    assert set(map(tuple, architectures.values())) == {("x86_64",)}, architectures
    # Only the architecture changes: still one runtime and one shared package.
    functions = resources_of_type(template_json, "AWS::Lambda::Function").values()
    assert {function["Properties"]["Runtime"] for function in functions} == {"python3.12"}
    assert len({json.dumps(function["Properties"]["Code"], sort_keys=True) for function in functions}) == 1


def test_explicit_arm64_context_matches_the_default(template_json: dict[str, Any]) -> None:
    template_arm64 = synthesize_stack_template({options.ARCHITECTURE.key: "arm64"})
    assert function_architectures(template_arm64) == function_architectures(template_json)


@pytest.mark.parametrize("value", ["amd64", "aarch64", "x86-64", ""])
def test_unknown_architecture_is_rejected_with_the_allowed_values(value: str) -> None:
    with pytest.raises(ValueError, match=re.escape(f'"architecture" must be one of "arm64", "x86_64", got {value!r}')):
        synthesize_stack_template({options.ARCHITECTURE.key: value})


def test_all_functions_share_one_code_asset(template_json: dict[str, Any]) -> None:
    codes = {
        json.dumps(function["Properties"]["Code"], sort_keys=True)
        for function in resources_of_type(template_json, "AWS::Lambda::Function").values()
    }
    assert len(codes) == 1


def test_no_log_retention_custom_resource(template: Template) -> None:
    template.resource_count_is("Custom::LogRetention", 0)


def iam_statements(template_json: dict[str, Any]) -> list[dict[str, Any]]:
    return [
        statement
        for policy in resources_of_type(template_json, "AWS::IAM::Policy").values()
        for statement in policy["Properties"]["PolicyDocument"]["Statement"]
    ]


def as_list(value: Any) -> list[Any]:
    return value if isinstance(value, list) else [value]


def test_no_wildcard_dynamodb_actions(template_json: dict[str, Any]) -> None:
    actions = [action for s in iam_statements(template_json) for action in as_list(s["Action"])]
    dynamodb_actions = [a for a in actions if a.startswith("dynamodb:")]
    assert dynamodb_actions, "the functions must be granted table access"
    assert "*" not in actions
    assert not [a for a in dynamodb_actions if "*" in a]


def test_api_function_gets_table_access_but_not_stream_access(template_json: dict[str, Any]) -> None:
    _, api = function_by_handler(template_json, API_FUNCTION.handler)
    api_role = api["Properties"]["Role"]["Fn::GetAtt"][0]
    api_statements = [
        s
        for policy in resources_of_type(template_json, "AWS::IAM::Policy").values()
        if {"Ref": api_role} in policy["Properties"]["Roles"]
        for s in policy["Properties"]["PolicyDocument"]["Statement"]
    ]
    api_actions = {a for s in api_statements for a in as_list(s["Action"])}
    assert "dynamodb:DescribeStream" not in api_actions
    assert "dynamodb:PutItem" in api_actions


def test_api_proxies_every_route_to_the_api_function_on_stage_prod(template_json: dict[str, Any]) -> None:
    api_function_id, _ = function_by_handler(template_json, API_FUNCTION.handler)
    methods = [m["Properties"] for m in resources_of_type(template_json, "AWS::ApiGateway::Method").values()]
    proxy_resources = [
        r["Properties"]["PathPart"] for r in resources_of_type(template_json, "AWS::ApiGateway::Resource").values()
    ]
    stages = [s["Properties"]["StageName"] for s in resources_of_type(template_json, "AWS::ApiGateway::Stage").values()]

    assert stages == [API_STAGE_NAME]
    assert proxy_resources == ["{proxy+}"]
    assert methods, "the root and the proxy resource need a method"
    for method in methods:
        assert method["HttpMethod"] == "ANY"
        assert method["Integration"]["Type"] == "AWS_PROXY"
        assert {"Fn::GetAtt": [api_function_id, "Arn"]} in method["Integration"]["Uri"]["Fn::Join"][1]


def stage(template_json: dict[str, Any]) -> dict[str, Any]:
    [found] = resources_of_type(template_json, "AWS::ApiGateway::Stage").values()
    return found


def test_the_stage_writes_json_access_logs_and_error_execution_logs(template_json: dict[str, Any]) -> None:
    properties = stage(template_json)["Properties"]
    fields = json.loads(properties["AccessLogSetting"]["Format"])
    for field in ("requestId", "principal", "method", "path", "status", "latencyMs", "integrationLatencyMs"):
        assert field in fields, field
    assert fields["responseType"] == "$context.error.responseType"  # which gateway error, if any
    log_group_id = properties["AccessLogSetting"]["DestinationArn"]["Fn::Join"][1][-1]["Ref"]
    assert template_json["Resources"][log_group_id]["Properties"]["RetentionInDays"] == 30
    [every_method] = properties["MethodSettings"]
    # Errors only, and never a request's or a response's body.
    assert (every_method["LoggingLevel"], every_method["DataTraceEnabled"]) == ("ERROR", False)
    # API Gateway logs through the region's CloudWatch role, which the stack sets and keeps.
    [account] = resources_of_type(template_json, "AWS::ApiGateway::Account").values()
    assert account["DeletionPolicy"] == "Retain"


def test_an_account_with_its_own_api_gateway_role_or_no_logs_gets_no_role() -> None:
    existing = synthesize_stack_template({options.API_LOGS_ROLE.key: "existing"})
    assert resources_of_type(existing, "AWS::ApiGateway::Account") == {}
    assert "AccessLogSetting" in stage(existing)["Properties"]
    silent = synthesize_stack_template({options.API_LOGS_ROLE.key: "none"})
    assert resources_of_type(silent, "AWS::ApiGateway::Account") == {}
    assert "AccessLogSetting" not in stage(silent)["Properties"]
    with pytest.raises(ValueError, match="apiGatewayCloudWatchRole"):
        synthesize_stack_template({options.API_LOGS_ROLE.key: "mine"})


# --- authorization (docs/security.md) -------------------------------------------------------------


def test_every_method_of_the_api_is_authorized_with_iam(template_json: dict[str, Any]) -> None:
    methods = resources_of_type(template_json, "AWS::ApiGateway::Method")
    assert methods
    assert {method["Properties"]["AuthorizationType"] for method in methods.values()} == {"AWS_IAM"}


def role_and_policy(template_json: dict[str, Any], role_id: str) -> tuple[dict[str, Any], list[dict[str, Any]]]:
    roles = {name: r for name, r in resources_of_type(template_json, "AWS::IAM::Role").items() if role_id in name}
    [(name, role)] = roles.items()
    statements = [
        statement
        for policy in resources_of_type(template_json, "AWS::IAM::Policy").values()
        if {"Ref": name} in policy["Properties"]["Roles"]
        for statement in policy["Properties"]["PolicyDocument"]["Statement"]
    ]
    return role, statements


def resource_paths(statement: dict[str, Any]) -> list[str]:
    """The part of each execute-api ARN after the stage: METHOD/PATH."""
    resources = statement["Resource"] if isinstance(statement["Resource"], list) else [statement["Resource"]]
    prefix = f"/{API_STAGE_NAME}/"
    return [str(resource["Fn::Join"][1][-1]).removeprefix(prefix) for resource in resources]


JWT = {
    options.AUTHORIZER.key: options.Authorizer.JWT.value,
    options.JWT_ISSUER.key: "https://issuer.example.com/pool/",
    options.JWT_AUDIENCE.key: "counter",
}


def test_with_the_jwt_authorizer_every_method_is_checked_by_the_token_authorizer() -> None:
    template_json = synthesize_stack_template(JWT)
    [(authorizer_id, authorizer)] = resources_of_type(template_json, "AWS::ApiGateway::Authorizer").items()
    properties = authorizer["Properties"]
    assert (properties["Type"], properties["IdentitySource"]) == ("TOKEN", "method.request.header.Authorization")
    assert properties["AuthorizerResultTtlInSeconds"] == AUTHORIZER_CACHE_SECONDS
    methods = resources_of_type(template_json, "AWS::ApiGateway::Method").values()
    assert methods
    for method in methods:
        assert method["Properties"]["AuthorizationType"] == "CUSTOM"
        assert method["Properties"]["AuthorizerId"] == {"Ref": authorizer_id}
    _, function = function_by_handler(template_json, AUTHORIZER_FUNCTION.handler)
    environment = function["Properties"]["Environment"]["Variables"]
    assert (
        environment[FunctionEnvironment.variable("jwt_issuer")] == "https://issuer.example.com/pool/"
    )  # exactly as configured
    assert (
        environment[FunctionEnvironment.variable("jwt_audience")],
        environment[FunctionEnvironment.variable("jwt_tenant_claim")],
    ) == ("counter", "tenant")
    # Tokens take the place of the SigV4 roles: none is deployed, none is an output.
    assert OUTPUT_TENANT_ROLE_ARN not in template_json["Outputs"]
    roles = resources_of_type(template_json, "AWS::IAM::Role")
    assert not any(TENANT_ROLE_ID in name or ADMIN_ROLE_ID in name for name in roles)


@pytest.mark.parametrize(
    ("change", "problem"),
    [
        ({options.JWT_ISSUER.key: "http://issuer.example.com"}, "https://"),
        ({options.JWT_AUDIENCE.key: ""}, "jwtAudience"),
        ({options.JWT_ISSUER.key: None}, "jwtIssuer"),
    ],
)
def test_the_jwt_authorizer_needs_an_https_issuer_and_an_audience(change: dict[str, Any], problem: str) -> None:
    context = {key: value for key, value in {**JWT, **change}.items() if value is not None}
    with pytest.raises(ValueError, match=problem):
        synthesize_stack_template(context)


def test_one_tenant_role_serves_every_tenant_through_its_session_tag(template_json: dict[str, Any]) -> None:
    role, statements = role_and_policy(template_json, TENANT_ROLE_ID)
    [trust] = role["Properties"]["AssumeRolePolicyDocument"]["Statement"]
    assert sorted(trust["Action"]) == ["sts:AssumeRole", "sts:TagSession"]
    assert trust["Condition"]["Null"] == {"aws:RequestTag/tenant": "false"}  # no session without a tenant
    assert trust["Condition"]["ForAllValues:StringEquals"] == {"aws:TagKeys": ["tenant"]}
    [statement] = statements
    assert (statement["Effect"], statement["Action"]) == ("Allow", "execute-api:Invoke")
    assert sorted(resource_paths(statement)) == [
        "*/accounts/${aws:PrincipalTag/tenant}/resources",
        "*/accounts/${aws:PrincipalTag/tenant}/resources/*",
        "*/accounts/${aws:PrincipalTag/tenant}/types/*/resources",
        "*/accounts/${aws:PrincipalTag/tenant}/types/*/resources/*",
        "GET/accounts/${aws:PrincipalTag/tenant}",  # and no PUT: a tenant never sets its limit
        "GET/accounts/${aws:PrincipalTag/tenant}/admission",  # would a create be admitted
        "GET/accounts/${aws:PrincipalTag/tenant}/history",  # a periodic quota's totals
        "GET/accounts/${aws:PrincipalTag/tenant}/types",
        "GET/accounts/${aws:PrincipalTag/tenant}/types/*",  # nor a type's
    ]


def test_the_tenant_role_refuses_a_session_whose_tag_could_widen_its_paths(template_json: dict[str, Any]) -> None:
    """IAM puts the tenant tag into the role's resource ARNs, so the trust policy refuses (for
    AssumeRole and TagSession alike) every tag value it can tell is not an account id."""
    role, _ = role_and_policy(template_json, TENANT_ROLE_ID)
    [trust] = role["Properties"]["AssumeRolePolicyDocument"]["Statement"]
    assert trust["Effect"] == "Allow"
    refused = trust["Condition"]["StringNotLike"][f"aws:RequestTag/{TENANT_TAG_KEY}"]

    def may_carry(value: str) -> bool:  # StringNotLike of several values: none may match
        return not any(string_like(pattern, value) for pattern in refused)

    for hostile in HOSTILE_TENANT_TAGS:
        assert not may_carry(hostile), hostile
    for account_id in ACCOUNT_ID_TAGS:
        assert may_carry(account_id), account_id


def test_the_admin_role_may_call_every_method(template_json: dict[str, Any]) -> None:
    _, statements = role_and_policy(template_json, ADMIN_ROLE_ID)
    [statement] = statements
    assert resource_paths(statement) == ["*/*"]


def test_api_gateways_own_answers_are_rendered_in_the_error_envelope(template_json: dict[str, Any]) -> None:
    responses = {
        r["Properties"]["ResponseType"]: r["Properties"]
        for r in resources_of_type(template_json, "AWS::ApiGateway::GatewayResponse").values()
    }
    assert {"DEFAULT_4XX", "DEFAULT_5XX", "MISSING_AUTHENTICATION_TOKEN", "ACCESS_DENIED", "THROTTLED"} <= set(
        responses
    )
    for response_type, properties in responses.items():
        template = properties["ResponseTemplates"]["application/json"]
        assert '"message": $context.error.messageString' in template, response_type
        assert '"requestId": "$context.requestId"' in template, response_type
        if response_type != "INTEGRATION_FAILURE":
            assert "StatusCode" not in properties  # each type keeps its own status
    assert responses["THROTTLED"]["ResponseParameters"] == {"gatewayresponse.header.Retry-After": "'1'"}


def test_a_throttled_or_failed_invocation_is_answered_503_retryable_as_the_functions_own_503(
    template_json: dict[str, Any],
) -> None:
    """Lambda's throttle reaches API Gateway as INTEGRATION_FAILURE (so do function errors and
    responses over 6 MB): answered as the API answers a DynamoDB outage, a 503 to retry."""
    [failure] = [
        r["Properties"]
        for r in resources_of_type(template_json, "AWS::ApiGateway::GatewayResponse").values()
        if r["Properties"]["ResponseType"] == "INTEGRATION_FAILURE"
    ]
    assert failure["StatusCode"] == "503"
    assert failure["ResponseParameters"] == {"gatewayresponse.header.Retry-After": "'1'"}
    assert '"code": "ServiceUnavailable"' in failure["ResponseTemplates"]["application/json"]


def test_the_table_has_no_throughput_maximum_unless_the_deployer_sets_one(template_json: dict[str, Any]) -> None:
    _, resource = table(template_json)
    assert "OnDemandThroughput" not in resource["Properties"]
    guarded = synthesize_stack_template({options.TABLE_MAX_WRITES.key: "40000", options.TABLE_MAX_READS.key: "80000"})
    _, resource = table(guarded)
    assert resource["Properties"]["OnDemandThroughput"] == {"MaxReadRequestUnits": 80000, "MaxWriteRequestUnits": 40000}


def stage_throttle(template_json: dict[str, Any]) -> dict[str, Any]:
    [stage] = resources_of_type(template_json, "AWS::ApiGateway::Stage").values()
    [every_method] = stage["Properties"]["MethodSettings"]
    assert (every_method["HttpMethod"], every_method["ResourcePath"]) == ("*", "/*")
    return {key: every_method[key] for key in ("ThrottlingRateLimit", "ThrottlingBurstLimit")}


def test_the_stage_throttles_every_method_together(template_json: dict[str, Any]) -> None:
    assert stage_throttle(template_json) == {"ThrottlingRateLimit": 10_000, "ThrottlingBurstLimit": 5_000}
    chosen = synthesize_stack_template({options.API_RATE_LIMIT.key: "200", options.API_BURST_LIMIT.key: "50"})
    assert stage_throttle(chosen) == {"ThrottlingRateLimit": 200, "ThrottlingBurstLimit": 50}


@pytest.mark.parametrize("value", ["0", "-5", "fast"])
def test_a_stage_rate_that_is_not_a_positive_whole_number_is_rejected(value: str) -> None:
    with pytest.raises(ValueError, match=r"apiRateLimit.*at least 1"):
        synthesize_stack_template({options.API_RATE_LIMIT.key: value})


def test_the_idempotency_window_is_a_day_unless_the_deployer_sets_it() -> None:
    def retention(template_json: dict[str, Any]) -> set[str]:
        functions = resources_of_type(template_json, "AWS::Lambda::Function").values()
        return {
            f["Properties"]["Environment"]["Variables"][FunctionEnvironment.variable("tombstone_retention")]
            for f in functions
        }

    assert retention(synth_template_json()) == {"86400"}
    assert retention(synthesize_stack_template({options.IDEMPOTENCY_WINDOW.key: "172800"})) == {"172800"}
    with pytest.raises(ValueError, match=r"idempotencyWindowSeconds.*at least 3600"):
        synthesize_stack_template({options.IDEMPOTENCY_WINDOW.key: "60"})


def api_tenant_rate(template_json: dict[str, Any]) -> tuple[str, str]:
    _, function = function_by_handler(template_json, API_FUNCTION.handler)
    environment = function["Properties"]["Environment"]["Variables"]
    return environment[FunctionEnvironment.variable("tenant_rate_limit")], environment[
        FunctionEnvironment.variable("tenant_window_seconds")
    ]


def test_every_tenants_default_rate_limit_is_set_by_context(template_json: dict[str, Any]) -> None:
    assert api_tenant_rate(template_json) == ("1000", "2")
    chosen = synthesize_stack_template({options.TENANT_RATE_LIMIT.key: "50", options.TENANT_BURST_SECONDS.key: "3"})
    assert api_tenant_rate(chosen) == ("50", "3")


@pytest.mark.parametrize(("rate", "window"), [("50", "61"), ("100001", "1"), ("0", "10")])
def test_a_tenant_rate_limit_outside_one_to_sixty_second_windows_is_rejected(rate: str, window: str) -> None:
    with pytest.raises(ValueError, match="tenantRateLimit"):
        synthesize_stack_template({options.TENANT_RATE_LIMIT.key: rate, options.TENANT_BURST_SECONDS.key: window})


# --- monitoring (docs/operations.md) ------------------------------------------------------------


def test_every_alarm_tells_the_topic_when_it_fires_and_when_it_is_over(template_json: dict[str, Any]) -> None:
    [topic_id] = resources_of_type(template_json, "AWS::SNS::Topic")
    alarms = resources_of_type(template_json, "AWS::CloudWatch::Alarm")
    assert len(alarms) >= 12
    for name, alarm in alarms.items():
        assert alarm["Properties"]["AlarmActions"] == [{"Ref": topic_id}], name
        assert alarm["Properties"]["OKActions"] == [{"Ref": topic_id}], name
    assert template_json["Outputs"][OUTPUT_ALARM_TOPIC_ARN]["Value"] == {"Ref": topic_id}


def alarmed_metrics(template_json: dict[str, Any]) -> set[str]:
    names = set()
    for alarm in resources_of_type(template_json, "AWS::CloudWatch::Alarm").values():
        properties = alarm["Properties"]
        if "MetricName" in properties:
            names.add(f"{properties['Namespace']}/{properties['MetricName']}")
        for part in properties.get("Metrics", []):
            if "MetricStat" in part:
                metric = part["MetricStat"]["Metric"]
                names.add(f"{metric['Namespace']}/{metric['MetricName']}")
    return names


def test_the_alarms_watch_what_an_operator_must_hear_about(template_json: dict[str, Any]) -> None:
    assert {
        "AWS/SQS/ApproximateNumberOfMessagesVisible",  # DLQ 1 piling up, DLQ 2 holding anything
        "AWS/SQS/ApproximateAgeOfOldestMessage",  # DLQ 1 not drained
        "AWS/Lambda/IteratorAge",  # counting behind the stream
        "AWS/Lambda/Errors",  # consumer, redrive, sweeper
        "AWS/Lambda/Invocations",  # the sweeper missed its runs
        "AWS/Lambda/Throttles",
        "AWS/ApiGateway/5XXError",
        "AWS/ApiGateway/Count",
        "AWS/ApiGateway/Latency",
        "AWS/DynamoDB/WriteThrottleEvents",
        f"{POWERTOOLS_METRICS_NAMESPACE}/HealHealed",  # counters drifted
        f"{POWERTOOLS_METRICS_NAMESPACE}/AuditDrift",  # counters apart from the items
    } <= alarmed_metrics(template_json)


def test_every_function_reading_a_stream_is_alarmed_when_it_falls_behind(template_json: dict[str, Any]) -> None:
    """Each function a stream event source feeds (a mapping with a starting position: the consumer,
    the usage-event publisher, any added later) has an IteratorAge alarm, a minute for 15 minutes."""
    readers = {
        json.dumps(mapping["Properties"]["FunctionName"])
        for mapping in resources_of_type(template_json, "AWS::Lambda::EventSourceMapping").values()
        if "StartingPosition" in mapping["Properties"]
    }
    consumer = function_by_handler(template_json, STREAM_CONSUMER_FUNCTION.handler)[0]
    publisher = function_by_handler(template_json, EVENT_PUBLISHER_FUNCTION.handler)[0]
    assert {json.dumps({"Ref": consumer}), json.dumps({"Ref": publisher})} <= readers
    lag_alarms = {}
    for alarm in resources_of_type(template_json, "AWS::CloudWatch::Alarm").values():
        properties = alarm["Properties"]
        if (properties.get("Namespace"), properties.get("MetricName")) == ("AWS/Lambda", "IteratorAge"):
            [dimension] = properties["Dimensions"]
            assert dimension["Name"] == "FunctionName"
            lag_alarms[json.dumps(dimension["Value"])] = properties
    assert set(lag_alarms) == readers
    for properties in lag_alarms.values():
        assert (properties["Statistic"], properties["Period"], properties["EvaluationPeriods"]) == ("Maximum", 300, 3)
        assert (properties["ComparisonOperator"], properties["Threshold"]) == ("GreaterThanOrEqualToThreshold", 60_000)


def test_a_missed_sweep_is_an_alarm_even_when_no_datapoint_arrives(template_json: dict[str, Any]) -> None:
    [missed] = [
        a["Properties"]
        for a in resources_of_type(template_json, "AWS::CloudWatch::Alarm").values()
        if a["Properties"].get("MetricName") == "Invocations"
    ]
    assert missed["ComparisonOperator"] == "LessThanThreshold"
    assert missed["TreatMissingData"] == "breaching"


def test_an_alarm_email_is_subscribed_when_given() -> None:
    template = synthesize_stack_template({options.ALARM_EMAIL.key: "ops@example.com"})
    [subscription] = resources_of_type(template, "AWS::SNS::Subscription").values()
    assert (subscription["Properties"]["Protocol"], subscription["Properties"]["Endpoint"]) == (
        "email",
        "ops@example.com",
    )


def test_no_email_is_subscribed_by_default(template_json: dict[str, Any]) -> None:
    assert resources_of_type(template_json, "AWS::SNS::Subscription") == {}


def test_a_dashboard_shows_the_counters_at_work(template_json: dict[str, Any]) -> None:
    [dashboard] = resources_of_type(template_json, "AWS::CloudWatch::Dashboard").values()
    body = json.dumps(dashboard["Properties"]["DashboardBody"])
    for shown in (
        "ResourcesCreated",
        "ResourcesDeleted",
        "AdmissionsRefused",
        "ShadowRefusals",
        "IteratorAge",
        "HealHealed",
        "CountingLag",
    ):
        assert shown in body, shown
    assert "WriteThrottleEvents" in body
    assert '\\"stat\\":\\"p95\\"' in body  # the counting lag, created -> counted


def test_the_dashboard_ranks_the_tenants_throttled_most(template_json: dict[str, Any]) -> None:
    [rule] = resources_of_type(template_json, "AWS::CloudWatch::InsightRule").values()
    parts = rule["Properties"]["RuleBody"]["Fn::Join"][1]
    api_logs = function_by_handler(template_json, API_FUNCTION.handler)[1]["Properties"]["LoggingConfig"]["LogGroup"]
    assert {"Ref": api_logs["Ref"]} in parts  # the API function's own log group
    rule_body = json.loads("".join(part if isinstance(part, str) else "LOG_GROUP" for part in parts))
    # The message and key the API function logs for each refusal (functions/api/gate.py).
    assert rule_body["Contribution"] == {
        "Keys": [f"$.{TENANT_LOG_KEY}"],
        "Filters": [{"Match": "$.message", "In": [THROTTLED_TENANT_MESSAGE]}],
    }
    [dashboard] = resources_of_type(template_json, "AWS::CloudWatch::Dashboard").values()
    body = "".join(part for part in dashboard["Properties"]["DashboardBody"]["Fn::Join"][1] if isinstance(part, str))
    assert f'"ruleName":"{rule["Properties"]["RuleName"]}"' in body


# --- outputs and naming ------------------------------------------------------------------------


@pytest.mark.parametrize(
    "output_name",
    [
        OUTPUT_API_URL,
        OUTPUT_TABLE_NAME,
        OUTPUT_STREAM_ARN,
        OUTPUT_DLQ1_URL,
        OUTPUT_DLQ2_URL,
        OUTPUT_TENANT_ROLE_ARN,
        OUTPUT_ADMIN_ROLE_ARN,
        OUTPUT_TENANT_TAG_KEY,
        OUTPUT_EVENT_BUS_NAME,
        OUTPUT_EVENT_BUS_ARN,
        OUTPUT_EVENTS_DLQ_URL,
        OUTPUT_EVENTS_DLQ_ALARM_NAME,
        OUTPUT_EVENTS_LOG_GROUP,
    ],
)
def test_outputs_exist_under_their_constant_names(template_json: dict[str, Any], output_name: str) -> None:
    assert output_name in template_json["Outputs"]


def test_outputs_point_at_the_right_resources(template_json: dict[str, Any]) -> None:
    table_id, _ = table(template_json)
    outputs = template_json["Outputs"]
    assert outputs[OUTPUT_TABLE_NAME]["Value"] == {"Ref": table_id}
    assert outputs[OUTPUT_STREAM_ARN]["Value"] == {"Fn::GetAtt": [table_id, "StreamArn"]}
    api_url = json.dumps(outputs[OUTPUT_API_URL]["Value"])
    assert "execute-api" in api_url


def test_synth_template_json_hands_out_independent_copies() -> None:
    first = synth_template_json()
    first["Resources"].clear()
    assert synth_template_json()["Resources"]


def test_stack_name_comes_from_context() -> None:
    import app as cdk_app

    assembly = cdk_app.build_app(
        context={
            options.STACK_NAME.key: "HybridCounterTest",
            options.CDK_BUNDLING_STACKS_CONTEXT_KEY: [],
        }
    ).synth()
    assert [stack.stack_name for stack in assembly.stacks] == ["HybridCounterTest"]


def test_redrive_may_read_the_table_stream(template_json: dict[str, Any]) -> None:
    table_id, _ = table(template_json)
    _, redrive = function_by_handler(template_json, REDRIVE_FUNCTION.handler)
    role_id = redrive["Properties"]["Role"]["Fn::GetAtt"][0]
    stream_statements = [
        s
        for policy in resources_of_type(template_json, "AWS::IAM::Policy").values()
        if {"Ref": role_id} in policy["Properties"]["Roles"]
        for s in policy["Properties"]["PolicyDocument"]["Statement"]
        if s["Resource"] == {"Fn::GetAtt": [table_id, "StreamArn"]}
    ]
    granted = {a for s in stream_statements for a in as_list(s["Action"])}
    assert granted == {"dynamodb:GetRecords", "dynamodb:GetShardIterator"}  # what its code calls, no more


def test_the_sweeper_runs_every_five_minutes_alone(template_json: dict[str, Any]) -> None:
    sweeper_id, sweeper = function_by_handler(template_json, SWEEPER_FUNCTION.handler)
    assert sweeper["Properties"]["ReservedConcurrentExecutions"] == 1
    rules = resources_of_type(template_json, "AWS::Events::Rule")
    [rule] = [rule for rule in rules.values() if "ScheduleExpression" in rule["Properties"]]
    assert rule["Properties"]["ScheduleExpression"] == "rate(5 minutes)"
    assert rule["Properties"]["State"] == "ENABLED"
    [target] = rule["Properties"]["Targets"]
    assert target["Arn"] == {"Fn::GetAtt": [sweeper_id, "Arn"]}


def test_the_activity_index_lets_the_sweeper_find_quiet_accounts(template_json: dict[str, Any]) -> None:
    _, table_resource = table(template_json)
    indexes = {index["IndexName"]: index for index in table_resource["Properties"]["GlobalSecondaryIndexes"]}
    activity = indexes[table_layout.ACTIVITY_INDEX.name]
    assert activity["KeySchema"] == [
        {"AttributeName": table_layout.ACTIVITY_BUCKET, "KeyType": "HASH"},
        {"AttributeName": table_layout.LAST_WRITE, "KeyType": "RANGE"},
    ]
    assert activity["Projection"] == {
        "ProjectionType": "INCLUDE",
        "NonKeyAttributes": list(table_layout.ACTIVITY_INDEX.projected),
    }


def test_the_accounts_index_is_the_account_registry(template_json: dict[str, Any]) -> None:
    """Sparse (only a default type's account item carries its key), by plan then account id, and
    projecting only the membership: the counter path's writes of that item never write it."""
    _, table_resource = table(template_json)
    indexes = {index["IndexName"]: index for index in table_resource["Properties"]["GlobalSecondaryIndexes"]}
    accounts = indexes[table_layout.ACCOUNTS_INDEX.name]
    assert accounts["KeySchema"] == [
        {"AttributeName": table_layout.REGISTRY, "KeyType": "HASH"},
        {"AttributeName": "account_id", "KeyType": "RANGE"},
    ]
    assert accounts["Projection"] == {"ProjectionType": "INCLUDE", "NonKeyAttributes": ["plan", "plan_version"]}
    assert {"AttributeName": table_layout.REGISTRY, "AttributeType": "S"} in table_resource["Properties"][
        "AttributeDefinitions"
    ]
