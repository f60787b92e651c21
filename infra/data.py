"""The single DynamoDB table: accounts, eventual counters and resources, with its stream."""

from __future__ import annotations

from typing import Final

import aws_cdk as cdk
from aws_cdk import aws_dynamodb as dynamodb
from constructs import Construct

from functions.adapters.table_layout import (
    ACCOUNTS_INDEX,
    ACTIVITY_INDEX,
    EXPIRES_AT,
    PARTITION_KEY,
    PENDING_INDEX,
    SORT_KEY,
    Index,
)
from infra.props import ExistingTable

TABLE_ID: Final = "Table"  # stable: it feeds the table's logical id


class DataStore(Construct):
    def __init__(
        self,
        scope: Construct,
        construct_id: str,
        *,
        removal_policy: cdk.RemovalPolicy,
        existing_table: ExistingTable | None = None,
        max_reads: int | None = None,
        max_writes: int | None = None,
    ) -> None:
        """`existing_table`: one the counter uses without owning it; None: its own. `max_reads`,
        `max_writes`: the on-demand table's maximum request units a second (None: no maximum)."""
        super().__init__(scope, construct_id)

        self.table: dynamodb.ITable
        if existing_table is not None:
            # A table the stack does not own (one restored from a backup: docs/upgrade.md, "Running on a
            # restored table"): the deployer set its stream, TTL and indexes as below.
            self.table = dynamodb.Table.from_table_attributes(
                self,
                TABLE_ID,
                table_name=existing_table.name,
                table_stream_arn=existing_table.stream_arn,
                global_indexes=[PENDING_INDEX.name, ACTIVITY_INDEX.name, ACCOUNTS_INDEX.name],
            )
            return

        table = dynamodb.Table(
            self,
            TABLE_ID,
            partition_key=_string(PARTITION_KEY),
            sort_key=_string(SORT_KEY),
            billing_mode=dynamodb.BillingMode.PAY_PER_REQUEST,
            # A cost guard when the deployer sets one (context); DynamoDB throttles beyond it.
            max_read_request_units=max_reads,
            max_write_request_units=max_writes,
            # The consumer needs both images: NEW to count creates, OLD/NEW to see soft deletes.
            stream=dynamodb.StreamViewType.NEW_AND_OLD_IMAGES,
            point_in_time_recovery_specification=dynamodb.PointInTimeRecoverySpecification(
                point_in_time_recovery_enabled=True
            ),
            removal_policy=removal_policy,
            # A retained table cannot be deleted by accident either (a throw-away stack's can).
            deletion_protection=removal_policy == cdk.RemovalPolicy.RETAIN,
            # Tombstones expire (docs/admission.md); TTL deletes cost no write capacity, and their
            # REMOVE records match none of the consumer's filter patterns.
            time_to_live_attribute=EXPIRES_AT,
        )
        # Sparse: only resources with counting work left carry the bucket attribute, so a sweep
        # reads pending work oldest first without scanning the table.
        _add_index(table, PENDING_INDEX)
        # Sparse: only account items carry the activity bucket. Sorted by the last API write, it
        # lets the sweeper find accounts that went quiet (and heal them) without scanning.
        _add_index(table, ACTIVITY_INDEX)
        # Sparse: one entry per account (its default type's account item), by its plan (or none)
        # and id: the account registry `GET /accounts` and a plan's rollout page (docs/plans.md).
        _add_index(table, ACCOUNTS_INDEX)
        self.table = table


def _string(name: str) -> dynamodb.Attribute:
    return dynamodb.Attribute(name=name, type=dynamodb.AttributeType.STRING)


def _add_index(table: dynamodb.Table, index: Index) -> None:
    """A global secondary index as the functions read it (functions/adapters/table_layout.py)."""
    table.add_global_secondary_index(
        index_name=index.name,
        partition_key=_string(index.partition_key),
        sort_key=_string(index.sort_key),
        projection_type=dynamodb.ProjectionType.INCLUDE,
        non_key_attributes=list(index.projected),
    )
