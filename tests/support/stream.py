"""Reads the table's stream from the emulator and delivers records to the consumer handler.

Stands in for the event source mapping in handler tests: it only moves records, in order, in
the Lambda event shape. (The local Lambda service of issue 3 is the faithful, configurable one.)
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from aws_lambda_powertools.utilities.data_classes.dynamo_db_stream_event import DynamoDBRecord

from functions.adapters.resource_records import stream_records
from functions.core.counting import BatchReport, CountingStore, process_records
from local.event_sources import lambda_shaped
from tests.support.lambda_context import FakeLambdaContext


class StreamTap:
    def __init__(self, streams_client: Any, stream_arn: str) -> None:
        self._client = streams_client
        self._arn = stream_arn
        self._iterators: dict[str, str | None] = {}
        self.seen: list[dict[str, Any]] = []

    def drain(self) -> list[dict[str, Any]]:
        """Every record written since the last drain, Lambda-shaped, in shard order."""
        shards = self._client.describe_stream(StreamArn=self._arn)["StreamDescription"]["Shards"]
        records: list[dict[str, Any]] = []
        for shard in shards:
            shard_id = shard["ShardId"]
            if shard_id not in self._iterators:
                self._iterators[shard_id] = self._client.get_shard_iterator(
                    StreamArn=self._arn, ShardId=shard_id, ShardIteratorType="TRIM_HORIZON"
                )["ShardIterator"]
            iterator = self._iterators[shard_id]
            while iterator:
                response = self._client.get_records(ShardIterator=iterator)
                batch = [lambda_shaped(record, self._arn) for record in response["Records"]]
                records.extend(batch)
                iterator = response.get("NextShardIterator")
                if not batch:
                    break
            self._iterators[shard_id] = iterator
        self.seen.extend(records)
        return records


def deliver(handler: Any, records: list[dict[str, Any]]) -> dict[str, Any]:
    """Invoke the consumer as Lambda does; returns its partial batch response."""
    response: dict[str, Any] = handler({"Records": records}, FakeLambdaContext(function_name="consumer"))
    return response


def failed_sequence_numbers(response: dict[str, Any]) -> list[str]:
    return [failure["itemIdentifier"] for failure in response.get("batchItemFailures", [])]


def process_stream_records(store: CountingStore, records: Sequence[dict[str, Any]]) -> BatchReport:
    """Lambda-shaped records through the consumer's codec and core, without its handler (metrics, logs)."""
    return process_records(store, stream_records(map(DynamoDBRecord, records)))
