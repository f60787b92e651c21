"""Reads a range of a DynamoDB stream shard back, as the consumer reads the records Lambda delivers."""

from __future__ import annotations

from typing import Any

from aws_lambda_powertools.utilities.data_classes.dynamo_db_stream_event import DynamoDBRecord

from functions.adapters.errors import Refused, translated
from functions.adapters.resource_records import stream_records
from functions.core.counting import ItemRecord
from functions.core.errors import StoreUnavailable
from functions.core.redrive import StreamBatchInfo, StreamRecordsGone

# Trimmed (older than 24 h), the stream or shard deleted, or an iterator past its 15 minutes.
_GONE_CODES = frozenset({"TrimmedDataAccessException", "ResourceNotFoundException", "ExpiredIteratorException"})

# GetRecords may answer with empty pages before it reaches the records of an open shard.
MAX_GET_RECORDS_CALLS = 200


class DynamoStreamReader:
    def __init__(self, client: Any, max_calls: int = MAX_GET_RECORDS_CALLS) -> None:
        self._client = client
        self._max_calls = max_calls

    def read_range(self, batch: StreamBatchInfo) -> list[ItemRecord]:
        """The range's records by sequence number. A GetRecords record has the fields of the record
        Lambda delivers that the codec reads, so Powertools' DynamoDBRecord reads both alike."""
        return stream_records(self.records(batch))

    def records(self, batch: StreamBatchInfo) -> list[DynamoDBRecord]:
        """The range's records as Powertools reads a Lambda event's."""
        return list(map(DynamoDBRecord, self._records(batch)))

    def _records(self, batch: StreamBatchInfo) -> list[dict[str, Any]]:
        end = int(batch.end_sequence_number)
        iterator = self._request(
            "get shard iterator",
            self._client.get_shard_iterator,
            StreamArn=batch.stream_arn,
            ShardId=batch.shard_id,
            ShardIteratorType="AT_SEQUENCE_NUMBER",
            SequenceNumber=batch.start_sequence_number,
        )["ShardIterator"]
        records: list[dict[str, Any]] = []
        for _ in range(self._max_calls):
            response = self._request("get records", self._client.get_records, ShardIterator=iterator, Limit=1000)
            for record in response.get("Records", []):
                if int(record["dynamodb"]["SequenceNumber"]) > end:
                    return records
                records.append(record)
            if records and int(records[-1]["dynamodb"]["SequenceNumber"]) == end:
                return records
            iterator = response.get("NextShardIterator")
            if not iterator:
                return records  # the shard closed: the range ended with it
        raise StoreUnavailable(
            f"stream range {batch.start_sequence_number}..{batch.end_sequence_number} not reached "
            f"after {self._max_calls} GetRecords calls",
            may_have_landed=False,
        )

    def _request(self, operation: str, method: Any, **request: Any) -> Any:
        try:
            with translated(operation):
                return method(**request)
        except Refused as refused:
            if refused.code in _GONE_CODES:
                raise StreamRecordsGone(f"{operation}: {refused.code}") from refused
            raise
