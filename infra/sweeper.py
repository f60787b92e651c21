"""The scheduled sweeper: applies work pending too long and heals quiet accounts' counters."""

from __future__ import annotations

from datetime import timedelta
from typing import Final

import aws_cdk as cdk
from aws_cdk import aws_dynamodb as dynamodb
from aws_cdk import aws_events as events
from aws_cdk import aws_events_targets as targets
from constructs import Construct

from functions.shared.config import FunctionEnvironment
from infra import table_access
from infra.function_settings import HEAL_QUIET_SECONDS, SWEEPER_FUNCTION
from infra.python_function import SharedSettings, python_function

SWEEPER_SCHEDULE_ID: Final = "SweeperSchedule"
SWEEPER_RATE_MINUTES: Final = 5
SWEEP_PENDING_OLDER_THAN_SECONDS: Final = 300  # the stream and the redrive get five minutes first
HEAL_LOOKBACK_SECONDS: Final = 6 * 3600


class Sweeper(Construct):
    def __init__(self, scope: Construct, construct_id: str, *, table: dynamodb.ITable, shared: SharedSettings) -> None:
        super().__init__(scope, construct_id)

        self.function = python_function(
            self,
            SWEEPER_FUNCTION,
            shared=shared,
            environment=FunctionEnvironment(
                table_name=table.table_name,
                pending_older_than=timedelta(seconds=SWEEP_PENDING_OLDER_THAN_SECONDS),
                quiet=timedelta(seconds=HEAL_QUIET_SECONDS),
                lookback=timedelta(seconds=HEAL_LOOKBACK_SECONDS),
            ),
        )
        # One sweep at a time: two would only repeat each other's (idempotent) work.
        self.function.node.default_child.add_property_override(  # type: ignore[union-attr]
            "ReservedConcurrentExecutions", 1
        )
        table_access.grant_table(table, self.function, table_access.SWEEPER, table_access.SWEEPER_INDEXES)
        self.schedule = events.Rule(
            self,
            SWEEPER_SCHEDULE_ID,
            schedule=events.Schedule.rate(cdk.Duration.minutes(SWEEPER_RATE_MINUTES)),
            targets=[targets.LambdaFunction(self.function, retry_attempts=0)],
        )
