"""Reads a range of a DynamoDB stream shard back, in the shape Lambda delivers records."""

from __future__ import annotations

from collections.abc import Mapping
from datetime import datetime
from typing import Any

from botocore.exceptions import BotoCoreError, ClientError

from functions.adapters.errors import error_code
from functions.core.counting import TransientStoreError
from functions.core.redrive import StreamBatchInfo, StreamRecordsGone

# Trimmed (older than 24 h), the stream or shard deleted, or an iterator past its 15 minutes.
_GONE_CODES = frozenset({"TrimmedDataAccessException", "ResourceNotFoundException", "ExpiredIteratorException"})

# GetRecords may answer with empty pages before it reaches the records of an open shard.
MAX_GET_RECORDS_CALLS = 200


class DynamoStreamReader:
    def __init__(self, client: Any, max_calls: int = MAX_GET_RECORDS_CALLS) -> None:
        self._client = client
        self._max_calls = max_calls

    def read_range(self, batch: StreamBatchInfo) -> list[dict[str, Any]]:
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
                records.append(lambda_shaped(record, batch.stream_arn))
            if records and int(records[-1]["dynamodb"]["SequenceNumber"]) == end:
                return records
            iterator = response.get("NextShardIterator")
            if not iterator:
                return records  # the shard closed: the range ended with it
        raise TransientStoreError(
            f"stream range {batch.start_sequence_number}..{batch.end_sequence_number} not reached "
            f"after {self._max_calls} GetRecords calls"
        )

    def _request(self, operation: str, method: Any, **request: Any) -> Any:
        try:
            return method(**request)
        except ClientError as error:
            if error_code(error) in _GONE_CODES:
                raise StreamRecordsGone(f"{operation}: {error_code(error)}") from error
            raise TransientStoreError(f"{operation}: {error}") from error
        except BotoCoreError as error:
            raise TransientStoreError(f"{operation}: {error}") from error


def lambda_shaped(record: Mapping[str, Any], stream_arn: str) -> dict[str, Any]:
    """A GetRecords record as the event source mapping would deliver it to the function."""
    shaped = dict(record)
    data = dict(record["dynamodb"])
    created = data.get("ApproximateCreationDateTime")
    if isinstance(created, datetime):
        data["ApproximateCreationDateTime"] = created.timestamp()
    shaped["dynamodb"] = data
    shaped["eventSourceARN"] = stream_arn
    return shaped
