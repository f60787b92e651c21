"""Alarms that reach someone, and a dashboard (docs/operations.md has what each alarm means and what
to do about it).

Every alarm sends to one SNS topic when it fires and when it recovers; an alarm email
(`-c alarmEmail=ops@...`) is subscribed to it. The topic is not encrypted: CloudWatch can publish to an encrypted topic
only through a customer managed key whose policy lets it, which a stack should not create by
default (Amazon SNS developer guide, "Encryption at rest": AWS managed keys do not allow it).
"""

from __future__ import annotations

from typing import Any, Final

import aws_cdk as cdk
from aws_cdk import aws_cloudwatch as cloudwatch
from aws_cdk import aws_cloudwatch_actions as cloudwatch_actions
from aws_cdk import aws_dynamodb as dynamodb
from aws_cdk import aws_lambda as lambda_
from aws_cdk import aws_sns as sns
from aws_cdk import aws_sns_subscriptions as subscriptions
from constructs import Construct

from functions.core.rate_limits import TENANT_LOG_KEY, THROTTLED_TENANT_MESSAGE
from infra.api import Api
from infra.counting import Counting
from infra.dead_letters import DeadLetters
from infra.function_settings import (
    EVENT_PUBLISHER_FUNCTION,
    POWERTOOLS_METRICS_NAMESPACE,
    POWERTOOLS_SERVICE_NAME,
    STREAM_CONSUMER_FUNCTION,
)
from infra.sweeper import Sweeper

ALARM_TOPIC_ID: Final = "AlarmTopic"
DASHBOARD_ID: Final = "Dashboard"

FIVE_MINUTES = cdk.Duration.minutes(5)


def _service_metric(
    name: str, period: cdk.Duration = FIVE_MINUTES, statistic: str = cloudwatch.Stats.SUM
) -> cloudwatch.Metric:
    """A metric the functions publish with Powertools (functions/shared/observability.py)."""
    return cloudwatch.Metric(
        namespace=POWERTOOLS_METRICS_NAMESPACE,
        metric_name=name,
        dimensions_map={"service": POWERTOOLS_SERVICE_NAME},
        statistic=statistic,
        period=period,
    )


# A stream consumer's construct id -> its lag alarm's id and description. A consumer not named
# here is alarmed all the same, as `<its construct id>Behind`.
STREAM_LAG_ALARMS: dict[str, tuple[str, str]] = {
    STREAM_CONSUMER_FUNCTION.construct_id: (
        "CountingBehind",
        "The consumer is more than a minute behind the stream: eventual counts lag",
    ),
    EVENT_PUBLISHER_FUNCTION.construct_id: (
        "UsageEventsBehind",
        "The usage-event publisher is more than a minute behind the stream: usage events arrive late",
    ),
}


def stream_consumers(scope: Construct) -> dict[str, str]:
    """The functions under `scope` that an event source mapping feeds from a stream: construct id
    -> function name. A mapping reads a stream when it has a starting position (DynamoDB, Kinesis
    and Kafka sources need one, a queue's has none: "AWS::Lambda::EventSourceMapping",
    StartingPosition)."""
    found: dict[str, str] = {}
    for child in scope.node.find_all():
        if isinstance(child, lambda_.CfnEventSourceMapping) and child.starting_position is not None:
            mapping = child.node.scope  # the EventSourceMapping, made in its function's scope
            owner = mapping.node.scope if mapping is not None else None
            function_id = owner.node.id if isinstance(owner, lambda_.Function) else cdk.Names.unique_id(child)
            found[function_id] = child.function_name
    return found


class Monitoring(Construct):
    def __init__(
        self,
        scope: Construct,
        construct_id: str,
        *,
        table: dynamodb.ITable,
        api: Api,
        counting: Counting,
        dead_letters: DeadLetters,
        sweeper: Sweeper,
        alarm_email: str | None,
        name_prefix: str,
    ) -> None:
        """`name_prefix`: unique to the counter in its account and region, for what has a fixed name."""
        super().__init__(scope, construct_id)
        self.topic = sns.Topic(self, ALARM_TOPIC_ID, display_name="Hybrid counter alarms", enforce_ssl=True)
        if alarm_email:
            self.topic.add_subscription(subscriptions.EmailSubscription(alarm_email))
        self.alarms: list[cloudwatch.Alarm] = [dead_letters.final_queue_alarm]
        consumer, redrive = counting.consumer_function, dead_letters.redrive_function
        dlq1 = dead_letters.stream_failure_queue

        self._alarm(
            "StreamFailuresWaiting",
            "DLQ 1 holds a failed stream batch older than 15 minutes: the redrive is not draining it",
            dlq1.metric_approximate_age_of_oldest_message(period=FIVE_MINUTES, statistic=cloudwatch.Stats.MAXIMUM),
            threshold=15 * 60,
        )
        self._alarm(
            "StreamFailuresPiling",
            "DLQ 1 holds 100 or more failed stream batches",
            dlq1.metric_approximate_number_of_messages_visible(period=FIVE_MINUTES, statistic=cloudwatch.Stats.MAXIMUM),
            threshold=100,
        )
        for name, function in (
            ("ConsumerErrors", consumer),
            ("RedriveErrors", redrive),
            ("SweeperErrors", sweeper.function),
        ):
            self._alarm(
                name,
                f"The {name.removesuffix('Errors').lower()} function failed",
                function.metric_errors(period=FIVE_MINUTES),
            )
        self._alarm(
            "SweeperMissedRuns",
            "The sweeper has not run for 15 minutes (it runs every 5): pending work and lost slots wait",
            sweeper.function.metric_invocations(period=FIVE_MINUTES),
            threshold=1,
            periods=3,
            below=True,
            missing=cloudwatch.TreatMissingData.BREACHING,
        )
        requests = api.rest_api.metric_count(period=FIVE_MINUTES)
        server_errors = api.rest_api.metric_server_error(period=FIVE_MINUTES)
        self._alarm(
            "ApiServerErrors",
            "More than 1% of API requests answered 5XX over 5 minutes",
            cloudwatch.MathExpression(
                expression="IF(requests > 0, 100 * errors / requests, 0)",
                using_metrics={"requests": requests, "errors": server_errors},
                period=FIVE_MINUTES,
                label="5XX %",
            ),
            threshold=1,
        )
        self._alarm(
            "ApiSlow",
            "The API's p99 latency is above 3 seconds",
            api.rest_api.metric_latency(period=FIVE_MINUTES, statistic="p99"),
            threshold=3000,
            periods=3,
        )
        self._alarm(
            "ApiThrottled",
            "The API function was throttled (its concurrency is used up): callers got 500s",
            api.function.metric_throttles(period=FIVE_MINUTES),
        )
        self._alarm(
            "TableThrottled",
            "DynamoDB throttled writes for 15 minutes: an item or key is hotter than a partition takes",
            table.metric("WriteThrottleEvents", period=FIVE_MINUTES, statistic=cloudwatch.Stats.SUM),
            periods=3,
        )
        self._alarm(
            "CountersDrifted",
            "A heal found best effort and eventual apart and set them right (docs/healing.md)",
            _service_metric("HealHealed", cdk.Duration.hours(1)),
        )
        self._alarm(
            "CountersDisagreeWithItems",
            "The sweeper's audit found an account whose counters disagree with its items beyond the writes "
            "in flight: run `python -m ops audit ACCOUNT --repair` (docs/operations.md)",
            _service_metric("AuditDrift", cdk.Duration.hours(1)),
        )
        self._tell_the_topic(self.alarms)
        self.dashboard = self._dashboard(table, api, consumer, dead_letters, name_prefix)

    def watch_stream_consumers(self, scope: Construct) -> None:
        """An iterator age alarm for every function that reads a stream under `scope`: called once
        everything is built, so a consumer added anywhere in the stack is found, not listed by hand."""
        for function_id, function_name in stream_consumers(scope).items():
            alarm_id, description = STREAM_LAG_ALARMS.get(
                function_id,
                (f"{function_id}Behind", f"The {function_id} function is more than a minute behind its stream"),
            )
            self._tell_the_topic([self._lag_alarm(alarm_id, description, function_name)])

    def _lag_alarm(self, construct_id: str, description: str, function_name: str) -> cloudwatch.Alarm:
        """IteratorAge, the age of the last record of a stream batch a function received ("Types of
        metrics for Lambda functions", Lambda developer guide), above a minute for 15 minutes."""
        metric = cloudwatch.Metric(
            namespace="AWS/Lambda",
            metric_name="IteratorAge",
            dimensions_map={"FunctionName": function_name},
            period=FIVE_MINUTES,
            statistic=cloudwatch.Stats.MAXIMUM,
        )
        return self._alarm(construct_id, description, metric, threshold=60_000, periods=3)

    def _tell_the_topic(self, alarms: list[cloudwatch.Alarm]) -> None:
        """Every alarm tells the topic when it fires and when it is over."""
        action = cloudwatch_actions.SnsAction(self.topic)
        for alarm in alarms:
            alarm.add_alarm_action(action)
            alarm.add_ok_action(action)

    def _alarm(
        self,
        construct_id: str,
        description: str,
        metric: cloudwatch.IMetric,
        threshold: float = 1,
        periods: int = 1,
        below: bool = False,
        missing: cloudwatch.TreatMissingData = cloudwatch.TreatMissingData.NOT_BREACHING,
    ) -> cloudwatch.Alarm:
        alarm = cloudwatch.Alarm(
            self,
            construct_id,
            alarm_description=description,
            metric=metric,
            threshold=threshold,
            evaluation_periods=periods,
            datapoints_to_alarm=periods,
            comparison_operator=cloudwatch.ComparisonOperator.LESS_THAN_THRESHOLD
            if below
            else cloudwatch.ComparisonOperator.GREATER_THAN_OR_EQUAL_TO_THRESHOLD,
            treat_missing_data=missing,
        )
        self.alarms.append(alarm)
        return alarm

    def _dashboard(
        self, table: dynamodb.ITable, api: Api, consumer: lambda_.IFunction, dead_letters: DeadLetters, name_prefix: str
    ) -> cloudwatch.Dashboard:
        per_second = cdk.Duration.minutes(1)

        def rate(name: str) -> cloudwatch.MathExpression:
            return cloudwatch.MathExpression(
                expression=f"{name.lower()} / 60",
                using_metrics={name.lower(): _service_metric(name, per_second)},
                period=per_second,
                label=f"{name} /s",
            )

        throttled_tenants = self._throttled_tenants_rule(api, name_prefix)
        dashboard = cloudwatch.Dashboard(self, DASHBOARD_ID)
        dashboard.add_widgets(
            cloudwatch.GraphWidget(
                title="Creates and deletes per second", left=[rate("ResourcesCreated"), rate("ResourcesDeleted")]
            ),
            cloudwatch.GraphWidget(
                title="Admissions refused (409), and shadow quotas' creates past their limit, per minute",
                left=[_service_metric("AdmissionsRefused", per_second), _service_metric("ShadowRefusals", per_second)],
            ),
            cloudwatch.GraphWidget(
                title="Counting lag (ms): created -> counted p95, and the stream's iterator age",
                left=[
                    _service_metric("CountingLag", per_second, cloudwatch.Stats.p(95)),
                    consumer.metric("IteratorAge", period=per_second, statistic=cloudwatch.Stats.MAXIMUM),
                ],
            ),
            cloudwatch.GraphWidget(title="Drift found and healed", left=[_service_metric("HealHealed", FIVE_MINUTES)]),
        )
        dashboard.add_widgets(
            cloudwatch.GraphWidget(
                title="Dead-letter queues (messages)",
                left=[
                    dead_letters.stream_failure_queue.metric_approximate_number_of_messages_visible(label="DLQ 1"),
                    dead_letters.final_queue.metric_approximate_number_of_messages_visible(label="DLQ 2"),
                ],
            ),
            cloudwatch.GraphWidget(
                title="Throttles",
                left=[
                    table.metric("WriteThrottleEvents", statistic=cloudwatch.Stats.SUM, label="DynamoDB writes"),
                    table.metric("ReadThrottleEvents", statistic=cloudwatch.Stats.SUM, label="DynamoDB reads"),
                    api.function.metric_throttles(label="API function"),
                ],
            ),
            cloudwatch.GraphWidget(
                title="API latency (ms) and 5XX",
                left=[api.rest_api.metric_latency(statistic="p99", label="p99")],
                right=[api.rest_api.metric_server_error(label="5XX")],
            ),
        )
        dashboard.add_widgets(TopContributors("Tenants throttled most (429 TenantThrottled)", throttled_tenants))
        return dashboard

    def _throttled_tenants_rule(self, api: Api, name_prefix: str) -> cloudwatch.CfnInsightRule:
        """A Contributor Insights rule over the API function's log: the function logs each
        `TenantThrottled` answer with the tenant (functions/api/gate.py), and the rule ranks them."""
        body = {
            "Schema": {"Name": "CloudWatchLogRule", "Version": 1},
            "LogGroupNames": [api.function.log_group.log_group_name],
            "LogFormat": "JSON",
            "Contribution": {
                "Keys": [f"$.{TENANT_LOG_KEY}"],
                "Filters": [{"Match": "$.message", "In": [THROTTLED_TENANT_MESSAGE]}],
            },
            "AggregateOn": "Count",
        }
        return cloudwatch.CfnInsightRule(
            self,
            "ThrottledTenants",
            # A rule must be named; CloudFormation generates no name for it.
            rule_name=f"{name_prefix}-throttled-tenants",
            rule_state="ENABLED",
            rule_body=cdk.Stack.of(self).to_json_string(body),
        )


class TopContributors(cloudwatch.ConcreteWidget):
    """A dashboard graph of a Contributor Insights rule's top contributors (no CDK widget has it:
    the dashboard body's `insightRule` metric widget property)."""

    def __init__(self, title: str, rule: cloudwatch.CfnInsightRule, contributors: int = 10) -> None:
        super().__init__(width=24, height=6)
        self._title = title
        self._rule = rule
        self._contributors = contributors

    def to_json(self) -> list[Any]:
        return [
            {
                "type": "metric",
                "width": self.width,
                "height": self.height,
                "x": self._x,
                "y": self._y,
                "properties": {
                    "title": self._title,
                    "view": "timeSeries",
                    "region": cdk.Aws.REGION,
                    "insightRule": {
                        "maxContributorCount": self._contributors,
                        "orderBy": "Sum",
                        # Its name as set, not a GetAtt: a dashboard accepts any name, and a stack
                        # whose engine lacks Contributor Insights (an emulator's) still deploys.
                        "ruleName": self._rule.rule_name,
                    },
                    "period": 60,
                    "stat": "Sum",
                },
            }
        ]
