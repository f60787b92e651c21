"""The single DynamoDB table: accounts, eventual counters and resources, with its stream."""

from __future__ import annotations

from collections.abc import Iterable

import aws_cdk as cdk
from aws_cdk import aws_dynamodb as dynamodb
from constructs import Construct

from functions.core import schema
from infra import constants, settings


class DataStore(Construct):
    def __init__(self, scope: Construct, construct_id: str) -> None:
        super().__init__(scope, construct_id)

        self.table: dynamodb.ITable
        existing = settings.existing_table(self)
        if existing is not None:
            # A table the stack does not own (one restored from a backup: README, "Running on a
            # restored table"): the deployer set its stream, TTL and indexes as below.
            name, stream_arn = existing
            self.table = dynamodb.Table.from_table_attributes(
                self,
                constants.TABLE_ID,
                table_name=name,
                table_stream_arn=stream_arn,
                global_indexes=[schema.PENDING_INDEX_NAME, schema.ACTIVITY_INDEX_NAME],
            )
            return

        max_reads, max_writes = settings.table_max_request_units(self)
        table = dynamodb.Table(
            self,
            constants.TABLE_ID,
            partition_key=dynamodb.Attribute(name=schema.PARTITION_KEY, type=dynamodb.AttributeType.STRING),
            sort_key=dynamodb.Attribute(name=schema.SORT_KEY, type=dynamodb.AttributeType.STRING),
            billing_mode=dynamodb.BillingMode.PAY_PER_REQUEST,
            # A cost guard when the deployer sets one (context); DynamoDB throttles beyond it.
            max_read_request_units=max_reads,
            max_write_request_units=max_writes,
            # The consumer needs both images: NEW to count creates, OLD/NEW to see soft deletes.
            stream=dynamodb.StreamViewType.NEW_AND_OLD_IMAGES,
            point_in_time_recovery_specification=dynamodb.PointInTimeRecoverySpecification(
                point_in_time_recovery_enabled=True
            ),
            removal_policy=settings.removal_policy(self),
            # A retained table cannot be deleted by accident either (a throw-away stack's can).
            deletion_protection=settings.removal_policy(self) == cdk.RemovalPolicy.RETAIN,
            # Tombstones expire (docs/admission.md); TTL deletes cost no write capacity, and their
            # REMOVE records match none of the consumer's filter patterns.
            time_to_live_attribute=schema.EXPIRES_AT_ATTRIBUTE,
        )
        # Sparse: only resources with counting work left carry the bucket attribute, so a sweep
        # reads pending work oldest first without scanning the table.
        _add_sparse_index(
            table,
            schema.PENDING_INDEX_NAME,
            schema.PENDING_BUCKET_ATTRIBUTE,
            schema.PENDING_SINCE_ATTRIBUTE,
            schema.PENDING_PROJECTED_ATTRIBUTES,
        )
        # Sparse: only account items carry the activity bucket. Sorted by the last API write, it
        # lets the sweeper find accounts that went quiet (and heal them) without scanning.
        _add_sparse_index(
            table,
            schema.ACTIVITY_INDEX_NAME,
            schema.ACTIVITY_BUCKET_ATTRIBUTE,
            schema.LAST_WRITE_ATTRIBUTE,
            schema.ACTIVITY_PROJECTED_ATTRIBUTES,
        )
        self.table = table


def _add_sparse_index(
    table: dynamodb.Table, name: str, partition_key: str, sort_key: str, projected: Iterable[str]
) -> None:
    """A global index of the items that carry `partition_key` (a string, as `sort_key` is), with
    `projected` beside the keys."""
    table.add_global_secondary_index(
        index_name=name,
        partition_key=dynamodb.Attribute(name=partition_key, type=dynamodb.AttributeType.STRING),
        sort_key=dynamodb.Attribute(name=sort_key, type=dynamodb.AttributeType.STRING),
        projection_type=dynamodb.ProjectionType.INCLUDE,
        non_key_attributes=list(projected),
    )
