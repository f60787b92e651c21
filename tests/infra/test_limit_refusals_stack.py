"""Limit Refused events' infrastructure in the synthesized template (infra/refusals.py,
docs/events.md): the subscription filter on the API function's own log group, the aggregator it
invokes (with the permission for CloudWatch Logs and a dead-letter queue for its asynchronous
invocations), the windows queue the emitter reads, their alarmed dead-letter queue, and the table
actions each function may call."""

from __future__ import annotations

from typing import Any

from functions.core.refusals import filter_pattern
from infra import table_access
from infra.function_settings import API_FUNCTION, REFUSAL_AGGREGATOR_FUNCTION, REFUSAL_EMITTER_FUNCTION
from infra.outputs import OUTPUT_REFUSAL_AGGREGATOR_FUNCTION, OUTPUT_REFUSALS_DLQ_URL
from infra.refusals import REFUSED_WINDOWS_MAX_RECEIVE_COUNT
from tests.infra.test_infra_stack import (
    event_source_mapping_of,
    function_by_handler,
    queue_id_by_output,
    resources_of_type,
    table,
)


def test_the_api_s_refusal_lines_are_sent_to_the_aggregator(template_json: dict[str, Any]) -> None:
    _, api = function_by_handler(template_json, API_FUNCTION.handler)
    aggregator_id, _ = function_by_handler(template_json, REFUSAL_AGGREGATOR_FUNCTION.handler)
    [subscription] = resources_of_type(template_json, "AWS::Logs::SubscriptionFilter").values()
    log_group = api["Properties"]["LoggingConfig"]["LogGroup"]
    assert subscription["Properties"] == {
        "LogGroupName": log_group,
        "DestinationArn": {"Fn::GetAtt": [aggregator_id, "Arn"]},
        "FilterPattern": filter_pattern(),
    }
    assert filter_pattern() == '{ $.usage_event = "LimitRefused" }'
    permissions = [
        p["Properties"]
        for p in resources_of_type(template_json, "AWS::Lambda::Permission").values()
        if p["Properties"]["FunctionName"] == {"Fn::GetAtt": [aggregator_id, "Arn"]}
    ]
    assert permissions == [
        {
            "Action": "lambda:InvokeFunction",
            "FunctionName": {"Fn::GetAtt": [aggregator_id, "Arn"]},
            "Principal": "logs.amazonaws.com",
            "SourceArn": {"Fn::GetAtt": [log_group["Ref"], "Arn"]},
        }
    ]


def test_failures_of_both_functions_reach_one_alarmed_dead_letter_queue(template_json: dict[str, Any]) -> None:
    dlq_id = queue_id_by_output(template_json, OUTPUT_REFUSALS_DLQ_URL)
    _, aggregator = function_by_handler(template_json, REFUSAL_AGGREGATOR_FUNCTION.handler)
    assert aggregator["Properties"]["DeadLetterConfig"] == {"TargetArn": {"Fn::GetAtt": [dlq_id, "Arn"]}}
    emitter_id, _ = function_by_handler(template_json, REFUSAL_EMITTER_FUNCTION.handler)
    mapping = event_source_mapping_of(template_json, emitter_id)
    assert mapping["FunctionResponseTypes"] == ["ReportBatchItemFailures"]
    windows_id = mapping["EventSourceArn"]["Fn::GetAtt"][0]
    windows = template_json["Resources"][windows_id]["Properties"]
    assert windows["RedrivePolicy"] == {
        "deadLetterTargetArn": {"Fn::GetAtt": [dlq_id, "Arn"]},
        "maxReceiveCount": REFUSED_WINDOWS_MAX_RECEIVE_COUNT,
    }
    assert windows["VisibilityTimeout"] == 6 * REFUSAL_EMITTER_FUNCTION.timeout_seconds
    dimension = {"Name": "QueueName", "Value": {"Fn::GetAtt": [dlq_id, "QueueName"]}}
    alarms = [
        a["Properties"]
        for a in resources_of_type(template_json, "AWS::CloudWatch::Alarm").values()
        if dimension in a["Properties"].get("Dimensions", [])
    ]
    assert len(alarms) == 1
    assert (alarms[0]["Threshold"], alarms[0]["ComparisonOperator"]) == (1, "GreaterThanOrEqualToThreshold")


def dynamodb_actions(template_json: dict[str, Any], handler: str) -> set[str]:
    _, function = function_by_handler(template_json, handler)
    role = function["Properties"]["Role"]["Fn::GetAtt"][0]
    table_id, _ = table(template_json)
    actions: set[str] = set()
    for policy in resources_of_type(template_json, "AWS::IAM::Policy").values():
        if {"Ref": role} not in policy["Properties"]["Roles"]:
            continue
        for statement in policy["Properties"]["PolicyDocument"]["Statement"]:
            listed = statement["Action"] if isinstance(statement["Action"], list) else [statement["Action"]]
            if any(a.startswith("dynamodb:") for a in listed):
                assert statement["Resource"] == {"Fn::GetAtt": [table_id, "Arn"]}
                actions |= set(listed)
    return actions


def test_each_function_may_make_the_table_calls_its_code_makes_and_no_other(template_json: dict[str, Any]) -> None:
    assert dynamodb_actions(template_json, REFUSAL_AGGREGATOR_FUNCTION.handler) == {"dynamodb:UpdateItem"}
    # GetItem, and a transaction of an Update and a Put (authorized per action).
    emitter = dynamodb_actions(template_json, REFUSAL_EMITTER_FUNCTION.handler)
    assert emitter == set(table_access.REFUSAL_EMITTER)
    assert emitter == {"dynamodb:GetItem", "dynamodb:PutItem", "dynamodb:UpdateItem"}


def test_an_output_names_the_aggregator_whose_settings_ops_replays_with(template_json: dict[str, Any]) -> None:
    aggregator_id, _ = function_by_handler(template_json, REFUSAL_AGGREGATOR_FUNCTION.handler)
    output = template_json["Outputs"][OUTPUT_REFUSAL_AGGREGATOR_FUNCTION]
    assert output["Value"] == {"Ref": aggregator_id}
