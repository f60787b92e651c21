"""The plan rollout's infrastructure in the synthesized template (infra/plan_rollout.py,
docs/plans.md): the pager on the table's stream filtered to the plan items, the rollout queue the
worker reads with partial batch responses and a capped concurrency, their alarmed dead-letter
queue, and what each may call."""

from __future__ import annotations

from typing import Any

from functions.adapters.table_layout import ACCOUNTS_INDEX, PLAN_FILTER_PATTERNS
from infra.function_settings import PLAN_PAGER_FUNCTION, PLAN_WORKER_FUNCTION
from infra.plan_rollout import ROLLOUT_MAX_RECEIVE_COUNT, ROLLOUT_WORKER_CONCURRENCY
from tests.infra.test_infra_stack import event_source_mapping_of, function_by_handler, resources_of_type, table


def test_a_plan_items_stream_records_and_no_other_invoke_the_pager(template_json: dict[str, Any]) -> None:
    table_id, _ = table(template_json)
    pager_id, _ = function_by_handler(template_json, PLAN_PAGER_FUNCTION.handler)
    mapping = event_source_mapping_of(template_json, pager_id)
    assert mapping["EventSourceArn"] == {"Fn::GetAtt": [table_id, "StreamArn"]}
    assert mapping["FunctionResponseTypes"] == ["ReportBatchItemFailures"]
    assert mapping["BisectBatchOnFunctionError"] is True
    import json

    assert [json.loads(f["Pattern"]) for f in mapping["FilterCriteria"]["Filters"]] == list(PLAN_FILTER_PATTERNS)
    assert PLAN_FILTER_PATTERNS == (
        {"eventName": ["INSERT", "MODIFY"], "dynamodb": {"Keys": {"sk": {"S": [{"prefix": "PLAN#"}]}}}},
    )


def test_the_worker_reads_the_rollout_queue_and_failures_reach_one_alarmed_dlq(template_json: dict[str, Any]) -> None:
    pager_id, _ = function_by_handler(template_json, PLAN_PAGER_FUNCTION.handler)
    worker_id, _ = function_by_handler(template_json, PLAN_WORKER_FUNCTION.handler)
    worker = event_source_mapping_of(template_json, worker_id)
    assert worker["FunctionResponseTypes"] == ["ReportBatchItemFailures"]
    assert worker["ScalingConfig"] == {"MaximumConcurrency": ROLLOUT_WORKER_CONCURRENCY}
    queue_id = worker["EventSourceArn"]["Fn::GetAtt"][0]
    queue = template_json["Resources"][queue_id]["Properties"]
    dlq_id = queue["RedrivePolicy"]["deadLetterTargetArn"]["Fn::GetAtt"][0]
    assert queue["RedrivePolicy"]["maxReceiveCount"] == ROLLOUT_MAX_RECEIVE_COUNT
    assert queue["VisibilityTimeout"] == 6 * PLAN_WORKER_FUNCTION.timeout_seconds
    pager = event_source_mapping_of(template_json, pager_id)
    assert pager["DestinationConfig"]["OnFailure"]["Destination"] == {"Fn::GetAtt": [dlq_id, "Arn"]}
    dimension = {"Name": "QueueName", "Value": {"Fn::GetAtt": [dlq_id, "QueueName"]}}
    alarms = [
        a["Properties"]
        for a in resources_of_type(template_json, "AWS::CloudWatch::Alarm").values()
        if dimension in a["Properties"].get("Dimensions", [])
    ]
    assert len(alarms) == 1
    assert (alarms[0]["Threshold"], alarms[0]["ComparisonOperator"]) == (1, "GreaterThanOrEqualToThreshold")
    # Both send to the queue (the pager its first page's messages; the worker pages on).
    for function_id in (pager_id, worker_id):
        role = template_json["Resources"][function_id]["Properties"]["Role"]["Fn::GetAtt"][0]
        statements = [
            statement
            for policy in resources_of_type(template_json, "AWS::IAM::Policy").values()
            if {"Ref": role} in policy["Properties"]["Roles"]
            for statement in policy["Properties"]["PolicyDocument"]["Statement"]
        ]
        sent_to = json_text([s["Resource"] for s in statements if "sqs:SendMessage" in s["Action"]])
        assert json_text({"Fn::GetAtt": [queue_id, "Arn"]}) in sent_to
        index_arns = [s["Resource"] for s in statements if s["Action"] == "dynamodb:Query"]
        assert len(index_arns) == 1
        assert f"/index/{ACCOUNTS_INDEX.name}" in json_text(index_arns[0])


def json_text(value: Any) -> str:
    import json

    return json.dumps(value)
