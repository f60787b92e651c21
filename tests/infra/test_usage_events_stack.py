"""The usage events' infrastructure in the synthesized template (infra/usage_events.py, docs/events.md):
the bus in the outputs, the publisher's own filtered event source with its failure handling, its
dead-letter queue and alarm, and the rule keeping every event in the log group `ops events` tails."""

from __future__ import annotations

import json
from typing import Any

import pytest

from functions.adapters.table_layout import OUTBOX_FILTER_PATTERNS
from functions.usage_events.models import SOURCE
from infra import options
from infra.counting import STREAM_MAX_RETRY_ATTEMPTS
from infra.function_settings import EVENT_PUBLISHER_FUNCTION
from infra.outputs import (
    OUTPUT_EVENT_BUS_ARN,
    OUTPUT_EVENT_BUS_NAME,
    OUTPUT_EVENTS_DLQ_ALARM_NAME,
    OUTPUT_EVENTS_DLQ_URL,
    OUTPUT_EVENTS_LOG_GROUP,
)
from infra.synth import synthesize_stack_template
from tests.infra.test_infra_stack import (
    event_source_mapping_of,
    function_by_handler,
    queue_id_by_output,
    resources_of_type,
    table,
)


def only_bus(template_json: dict[str, Any]) -> str:
    [bus_id] = resources_of_type(template_json, "AWS::Events::EventBus")
    return str(bus_id)


def test_the_bus_is_the_stacks_and_its_name_and_arn_are_outputs(template_json: dict[str, Any]) -> None:
    bus_id = only_bus(template_json)
    outputs = template_json["Outputs"]
    assert outputs[OUTPUT_EVENT_BUS_NAME]["Value"] == {"Ref": bus_id}
    assert outputs[OUTPUT_EVENT_BUS_ARN]["Value"] == {"Fn::GetAtt": [bus_id, "Arn"]}


def test_the_publisher_reads_the_outbox_inserts_with_bounded_retries_and_a_dead_letter_queue(
    template_json: dict[str, Any],
) -> None:
    publisher_id, _ = function_by_handler(template_json, EVENT_PUBLISHER_FUNCTION.handler)
    table_id, _ = table(template_json)
    mapping = event_source_mapping_of(template_json, publisher_id)
    assert mapping["EventSourceArn"] == {"Fn::GetAtt": [table_id, "StreamArn"]}
    assert mapping["StartingPosition"] == "TRIM_HORIZON"
    assert [json.loads(f["Pattern"]) for f in mapping["FilterCriteria"]["Filters"]] == list(OUTBOX_FILTER_PATTERNS)
    assert mapping["FunctionResponseTypes"] == ["ReportBatchItemFailures"]
    assert mapping["BisectBatchOnFunctionError"] is True
    assert mapping["MaximumRetryAttempts"] == STREAM_MAX_RETRY_ATTEMPTS
    dlq_id = queue_id_by_output(template_json, OUTPUT_EVENTS_DLQ_URL)
    assert mapping["DestinationConfig"] == {"OnFailure": {"Destination": {"Fn::GetAtt": [dlq_id, "Arn"]}}}


def test_the_publisher_may_put_events_on_the_bus_and_nothing_else_on_the_table(template_json: dict[str, Any]) -> None:
    _, publisher = function_by_handler(template_json, EVENT_PUBLISHER_FUNCTION.handler)
    role = publisher["Properties"]["Role"]["Fn::GetAtt"][0]
    statements = [
        statement
        for policy in resources_of_type(template_json, "AWS::IAM::Policy").values()
        if {"Ref": role} in policy["Properties"]["Roles"]
        for statement in policy["Properties"]["PolicyDocument"]["Statement"]
    ]
    put = [s for s in statements if s["Action"] == "events:PutEvents"]
    assert [s["Resource"] for s in put] == [{"Fn::GetAtt": [only_bus(template_json), "Arn"]}]
    table_actions = {
        action
        for s in statements
        for action in (s["Action"] if isinstance(s["Action"], list) else [s["Action"]])
        if action.startswith("dynamodb:")
    }
    # What Lambda's stream poller needs, nothing for the code: the records carry the events.
    assert table_actions == {
        "dynamodb:DescribeStream",
        "dynamodb:GetRecords",
        "dynamodb:GetShardIterator",
        "dynamodb:ListStreams",
    }


def test_a_message_in_the_events_dead_letter_queue_raises_an_alarm_to_the_topic(template_json: dict[str, Any]) -> None:
    dlq_id = queue_id_by_output(template_json, OUTPUT_EVENTS_DLQ_URL)
    alarm_id = template_json["Outputs"][OUTPUT_EVENTS_DLQ_ALARM_NAME]["Value"]["Ref"]
    properties = resources_of_type(template_json, "AWS::CloudWatch::Alarm")[alarm_id]["Properties"]
    assert properties["MetricName"] == "ApproximateNumberOfMessagesVisible"
    assert properties["Dimensions"] == [{"Name": "QueueName", "Value": {"Fn::GetAtt": [dlq_id, "QueueName"]}}]
    assert properties["Threshold"] == 1
    [topic_id] = resources_of_type(template_json, "AWS::SNS::Topic")
    assert properties["AlarmActions"] == [{"Ref": topic_id}]


def test_every_usage_event_is_kept_in_the_log_group_ops_events_tails(template_json: dict[str, Any]) -> None:
    log_group_id = template_json["Outputs"][OUTPUT_EVENTS_LOG_GROUP]["Value"]["Ref"]
    rules = [
        rule["Properties"]
        for rule in resources_of_type(template_json, "AWS::Events::Rule").values()
        if rule["Properties"].get("EventBusName") == {"Ref": only_bus(template_json)}
    ]
    [to_log] = [rule for rule in rules if log_group_id in json.dumps(rule["Targets"])]
    assert to_log["EventPattern"] == {"source": [SOURCE]}
    [policy] = resources_of_type(template_json, "AWS::Logs::ResourcePolicy").values()
    assert "events.amazonaws.com" in json.dumps(policy["Properties"]["PolicyDocument"])


def threshold_rules_to_the_topic(template_json: dict[str, Any]) -> list[dict[str, Any]]:
    [topic_id] = resources_of_type(template_json, "AWS::SNS::Topic")
    return [
        rule["Properties"]
        for rule in resources_of_type(template_json, "AWS::Events::Rule").values()
        if {"Ref": topic_id} in [target["Arn"] for target in rule["Properties"].get("Targets", [])]
    ]


def test_an_alarm_email_hears_of_threshold_crossings_too() -> None:
    template_json = synthesize_stack_template({options.ALARM_EMAIL.key: "ops@example.com"})
    [rule] = threshold_rules_to_the_topic(template_json)
    assert rule["EventBusName"] == {"Ref": only_bus(template_json)}
    assert rule["EventPattern"] == {"source": [SOURCE], "detail-type": ["Usage Threshold Crossed"]}
    [topic_id] = resources_of_type(template_json, "AWS::SNS::Topic")
    policies = [p["Properties"] for p in resources_of_type(template_json, "AWS::SNS::TopicPolicy").values()]
    topic_policies = [json.dumps(p["PolicyDocument"]) for p in policies if {"Ref": topic_id} in p["Topics"]]
    assert any("events.amazonaws.com" in policy for policy in topic_policies)  # EventBridge may publish


def test_without_an_alarm_email_no_event_goes_to_the_topic(template_json: dict[str, Any]) -> None:
    assert threshold_rules_to_the_topic(template_json) == []


SECRET = "arn:aws:secretsmanager:eu-west-1:111122223333:secret:usage-webhook-AbCdEf"


def test_a_usage_webhook_is_an_api_destination_of_every_usage_event_with_its_key_from_secrets_manager() -> None:
    template_json = synthesize_stack_template(
        {
            options.USAGE_WEBHOOK_URL.key: "https://hooks.example.com/usage",
            options.USAGE_WEBHOOK_SECRET.key: SECRET,
        }
    )
    [destination] = resources_of_type(template_json, "AWS::Events::ApiDestination").values()
    assert destination["Properties"]["InvocationEndpoint"] == "https://hooks.example.com/usage"
    assert destination["Properties"]["HttpMethod"] == "POST"
    [connection] = resources_of_type(template_json, "AWS::Events::Connection").values()
    key = connection["Properties"]["AuthParameters"]["ApiKeyAuthParameters"]
    assert key["ApiKeyName"] == "x-api-key"
    assert key["ApiKeyValue"] == f"{{{{resolve:secretsmanager:{SECRET}:SecretString:::}}}}"  # resolved at deploy
    [destination_id] = resources_of_type(template_json, "AWS::Events::ApiDestination")
    [rule] = [
        r["Properties"]
        for r in resources_of_type(template_json, "AWS::Events::Rule").values()
        if destination_id in json.dumps(r["Properties"].get("Targets", []))
    ]
    assert rule["EventPattern"] == {"source": [SOURCE]}  # every type: the receiver reads detail-type


def test_a_usage_webhook_needs_its_secret_and_an_https_url() -> None:
    with pytest.raises(ValueError, match="go together"):
        synthesize_stack_template({options.USAGE_WEBHOOK_URL.key: "https://hooks.example.com/usage"})
    with pytest.raises(ValueError, match="usageWebhookUrl"):
        synthesize_stack_template(
            {
                options.USAGE_WEBHOOK_URL.key: "http://hooks.example.com/usage",
                options.USAGE_WEBHOOK_SECRET.key: SECRET,
            }
        )
