"""Redrive of a stream batch that exhausted its retries.

Lambda's on-failure destination receives metadata only (`DDBStreamBatchInfo`), never the records,
so the redrive re-reads exactly that range of the stream and applies it with the consumer's own
`process_stream_records`. When the records are gone (trimmed after 24 h, shard or stream gone,
iterator expired) it sweeps the pending index instead, so no work is lost with the stream.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Protocol

from functions.core.counting import BatchReport, CountingStore, process_pending_items, process_stream_records


class InvalidFailureMessage(ValueError):
    """Not an on-failure record of a DynamoDB stream event source: no retry can fix it."""


class StreamRecordsGone(Exception):
    """The range can no longer be read from the stream."""


class RedriveIncomplete(Exception):
    """Some work failed; the message must be retried (and, if it keeps failing, reach DLQ 2)."""


@dataclass(frozen=True)
class StreamBatchInfo:
    stream_arn: str
    shard_id: str
    start_sequence_number: str
    end_sequence_number: str
    batch_size: int


class StreamRangeReader(Protocol):
    def read_range(self, batch: StreamBatchInfo) -> Sequence[Mapping[str, Any]]:
        """The records from start to end inclusive, Lambda-shaped. Raises StreamRecordsGone."""
        ...


class PendingSource(Protocol):
    def pending_items(self, older_than: str | None) -> Iterable[Mapping[str, Any]]:
        """Every resource in the pending index (optionally only those pending since before
        `older_than`), without scanning the table."""
        ...


def parse_failure_message(body: str) -> StreamBatchInfo:
    try:
        message = json.loads(body)
        info = message["DDBStreamBatchInfo"]
        batch = StreamBatchInfo(
            stream_arn=_text(info, "streamArn"),
            shard_id=_text(info, "shardId"),
            start_sequence_number=_sequence(info, "startSequenceNumber"),
            end_sequence_number=_sequence(info, "endSequenceNumber"),
            batch_size=int(info.get("batchSize", 0)),
        )
    except (ValueError, KeyError, TypeError) as error:
        raise InvalidFailureMessage(f"not a DynamoDB stream on-failure message: {error}") from error
    if int(batch.start_sequence_number) > int(batch.end_sequence_number):
        raise InvalidFailureMessage("startSequenceNumber is after endSequenceNumber")
    return batch


def _text(info: Mapping[str, Any], name: str) -> str:
    value = info[name]
    if not isinstance(value, str) or not value:
        raise ValueError(f"{name} must be a non-empty string")
    return value


def _sequence(info: Mapping[str, Any], name: str) -> str:
    value = _text(info, name)
    if not value.isdigit():
        raise ValueError(f"{name} must be a decimal sequence number")
    return value


@dataclass(frozen=True)
class RedriveResult:
    source: str  # "stream" or "sweep"
    report: BatchReport


def redrive(
    batch: StreamBatchInfo, reader: StreamRangeReader, store: CountingStore, pending: PendingSource
) -> RedriveResult:
    try:
        records = reader.read_range(batch)
    except StreamRecordsGone:
        result = RedriveResult("sweep", process_pending_items(store, pending.pending_items(None)))
    else:
        result = RedriveResult("stream", process_stream_records(store, records))
    if result.report.failed:
        raise RedriveIncomplete(f"{len(result.report.failed)} item(s) failed in the {result.source} pass")
    return result
