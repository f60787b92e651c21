"""Redrive of a stream batch that exhausted its retries.

Lambda's on-failure destination receives metadata only (`DDBStreamBatchInfo`), never the records,
so the redrive re-reads exactly that range of the stream and applies it with the consumer's own
`process_records`; a record that still fails fails the message, which SQS retries and at
last moves to DLQ 2. When the records are gone (trimmed after 24 h, shard or stream gone,
iterator expired) it sweeps the pending index instead, so no work is lost with the stream.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Protocol

from functions.core.counting import BatchReport, CountingStore, ItemRecord, process_pending, process_records

# Passes over the records of a range that failed, within one invocation, before the message fails.
REDRIVE_PASSES = 3


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
    def read_range(self, batch: StreamBatchInfo) -> Sequence[ItemRecord]:
        """The records from start to end inclusive, by sequence number. Raises StreamRecordsGone."""
        ...


class PendingSource(Protocol):
    def pending_records(self, older_than: str | None) -> Iterable[ItemRecord]:
        """Every resource in the pending index (optionally only those pending since before
        `older_than`), by key, without scanning the table."""
        ...


@dataclass(frozen=True)
class RedriveResult:
    source: str  # "stream" or "sweep"
    report: BatchReport


def redrive(
    batch: StreamBatchInfo, *, reader: StreamRangeReader, counting: CountingStore, pending: PendingSource
) -> RedriveResult:
    try:
        records = reader.read_range(batch)
    except StreamRecordsGone:
        # The range's records cannot be named any more, so all pending work is applied instead.
        # Work that still fails stays in the pending index, where the scheduled sweeper retries it
        # and reports it. Failing this message would only move an unrelated range to DLQ 2.
        return RedriveResult("sweep", process_pending(counting, pending.pending_records(None)))
    report = process_records(counting, records)
    for _ in range(REDRIVE_PASSES - 1):
        if not report.failed:
            break
        # A range holds up to BatchSize records, and a few of them failing a pass (a conflict,
        # throttling) would otherwise send the whole range around SQS again.
        failed = set(report.failed)
        again = process_records(counting, [(item_id, record) for item_id, record in records if item_id in failed])
        report.outcomes.update(again.outcomes)
        report.failed = again.failed
        report.creates_done.extend(again.creates_done)
    if report.failed:
        raise RedriveIncomplete(f"{len(report.failed)} record(s) of the range failed {REDRIVE_PASSES} times")
    return RedriveResult("stream", report)
