"""Event source mappings as the Lambda service runs them, driven by the deployed settings.

DynamoDB stream sources poll every shard, filter, batch up to BatchSize (gathering records for up to
MaximumBatchingWindowInSeconds first) and invoke. They honour
the partial batch response (checkpoint at the lowest failed sequence number, retry from there),
whole-batch errors, BisectBatchOnFunctionError (bisecting does not use up retries),
MaximumRetryAttempts and MaximumRecordAgeInSeconds. Then they send the on-failure record to the
destination queue, in AWS's metadata shape.

SQS sources receive, invoke, delete what succeeded and leave the rest. The rest comes back after
the visibility timeout, and the queue's redrive policy moves it on after maxReceiveCount.
"""

from __future__ import annotations

import hashlib
import json
import logging
import threading
import time
import uuid
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any, Protocol

from local.filters import matches_any, parse_filters
from local.functions import FunctionPool, Invocation

logger = logging.getLogger("local.runtime")

Record = dict[str, Any]


@dataclass
class SourceStats:
    invocations: int = 0
    failed_invocations: int = 0
    records_delivered: int = 0
    sent_to_destination: int = 0
    deleted_messages: int = 0
    lock: threading.Lock = field(default_factory=threading.Lock, repr=False)

    def add(self, **counts: int) -> None:
        with self.lock:
            for name, value in counts.items():
                setattr(self, name, getattr(self, name) + value)


def log_invocation(
    function: str, batch: int, invocation: Invocation, note: str = "", status: int | None = None
) -> None:
    """One line of the run log; `status`: the HTTP status the caller got, for an API invocation."""
    if status is not None:
        outcome = f"{status}{'' if invocation.ok else f' {invocation.error_type}'}"
    else:
        outcome = "ok" if invocation.ok else f"error {invocation.error_type}"
    logger.info("%-16s batch=%-3d %-28s %6.0f ms %s", function, batch, outcome, invocation.duration_ms, note)


def _failed_ids(invocation: Invocation, valid_ids: Sequence[str]) -> list[str] | None:
    """Ids reported in a partial batch response; None when the response is not a valid one,
    which Lambda treats as a failure of the whole batch."""
    payload = invocation.payload
    if payload is None or payload == {}:
        return []
    if not isinstance(payload, Mapping) or not isinstance(payload.get("batchItemFailures", []), list):
        return None
    ids = []
    for failure in payload.get("batchItemFailures", []):
        identifier = failure.get("itemIdentifier") if isinstance(failure, Mapping) else None
        if not identifier or identifier not in valid_ids:
            return None
        ids.append(identifier)
    return ids


# --- DynamoDB streams ---------------------------------------------------------------------------


class DeliveryFaults(Protocol):
    """What a stream source may be told to do wrong, batch by batch: a hook for fault injection
    (`RuntimeSettings.delivery_faults`; chaos/faults.py gives one); each answer is asked once per
    batch."""

    def deliver_twice_at_once(self, records: int) -> bool:
        """Give the batch to two sandboxes at once, as overlapping consumers would."""
        ...

    def deliver_again(self, records: int) -> bool:
        """Deliver a batch that succeeded once more."""
        ...

    def replay_late(self, records: int) -> bool:
        """Also send a batch that succeeded to the on-failure destination, after the next batch."""
        ...


@dataclass(frozen=True)
class StreamMapping:
    uuid: str
    stream_arn: str
    function: FunctionPool
    batch_size: int
    # Lambda invokes when the batch is full or this many seconds after its first record came in
    # (Lambda developer guide, "Batching behavior" of event source mappings); 0: at once.
    batching_window_seconds: float
    starting_position: str
    patterns: list[dict[str, Any]]
    report_item_failures: bool
    bisect: bool
    max_retry_attempts: int  # -1: until the record expires
    max_record_age_seconds: int  # -1: no limit beyond the stream's 24 h
    on_failure_arn: str | None
    # The table's partition key (the stream's KeySchema), which the parallelization factor's lanes
    # are chosen by.
    partition_key: str
    # Batches of one shard processed at once, records of one partition key always in the same one,
    # in order (Lambda developer guide, "Using Lambda with DynamoDB", parallelization factor).
    parallelization_factor: int = 1

    @classmethod
    def from_mapping(cls, mapping: Mapping[str, Any], function: FunctionPool, partition_key: str) -> StreamMapping:
        return cls(
            uuid=mapping["UUID"],
            stream_arn=mapping["EventSourceArn"],
            function=function,
            batch_size=int(mapping.get("BatchSize", 100)),
            batching_window_seconds=float(mapping.get("MaximumBatchingWindowInSeconds") or 0),
            starting_position=mapping.get("StartingPosition", "TRIM_HORIZON"),
            patterns=parse_filters(mapping.get("FilterCriteria")),
            report_item_failures="ReportBatchItemFailures" in mapping.get("FunctionResponseTypes", []),
            bisect=bool(mapping.get("BisectBatchOnFunctionError", False)),
            max_retry_attempts=int(mapping.get("MaximumRetryAttempts", -1)),
            max_record_age_seconds=int(mapping.get("MaximumRecordAgeInSeconds", -1)),
            on_failure_arn=(mapping.get("DestinationConfig") or {}).get("OnFailure", {}).get("Destination"),
            partition_key=partition_key,
            parallelization_factor=int(mapping.get("ParallelizationFactor") or 1),
        )


class Activity:
    """The runs of the runtime's functions, for the shard pollers that went idle (`note` after each).

    A poller that read no record for `idle_after_seconds` polls every `idle_poll_seconds` instead
    of four times a second, and at once after a function has run (its writes may have made
    records): an idle system's three stream pollers took 5.5% of a core polling four times a
    second, 2026-11-28. Records written from outside the runtime wait at most the idle poll."""

    def __init__(self, idle_after_seconds: float = 1.0, idle_poll_seconds: float = 1.0) -> None:
        self.idle_after_seconds = idle_after_seconds
        self.idle_poll_seconds = idle_poll_seconds
        self._changed = threading.Condition()
        self.runs = 0

    def note(self) -> None:
        with self._changed:
            self.runs += 1
            self._changed.notify_all()

    def wait_past(self, runs: int, seconds: float) -> None:
        """Until a run after the first `runs`, or `seconds`."""
        with self._changed:
            self._changed.wait_for(lambda: self.runs != runs, seconds)


class StreamShardPoller:
    """One shard of one mapping. Records are spread over `ParallelizationFactor` lanes by their
    partition key; each round sends one batch per lane that has records, the lanes' batches at
    once, and the next round starts when all are done. So records of one key go out one batch at a
    time, in order, while other keys' batches run beside them (with a factor of 1: one batch at a
    time, in shard order). Lambda does not wait for the slowest lane before the next round; this
    is one of the schedules it may run."""

    def __init__(
        self,
        mapping: StreamMapping,
        shard_id: str,
        streams: Any,
        send_on_failure: Callable[[str, str], None],
        stats: SourceStats,
        stop: threading.Event,
        poll_interval: float,
        retry_delay: Callable[[int], float],
        faults: DeliveryFaults | None = None,
        activity: Activity | None = None,
    ) -> None:
        self.mapping = mapping
        self._faults = faults
        self._activity = activity
        self._held_replays: list[list[Record]] = []
        self.shard_id = shard_id
        self._streams = streams
        self._send_on_failure = send_on_failure
        self._stats = stats
        self._stop = stop
        self._poll_interval = poll_interval
        self._retry_delay = retry_delay
        self._pending: list[Record] = []
        self._gathering_since = 0.0  # when the oldest pending record was read
        self.finished = threading.Event()

    def run(self) -> None:
        try:
            iterator: str | None = self._streams.get_shard_iterator(
                StreamArn=self.mapping.stream_arn,
                ShardId=self.shard_id,
                ShardIteratorType=self.mapping.starting_position,
            )["ShardIterator"]
            last_read, runs = time.monotonic(), 0
            while not self._stop.is_set() and (iterator or self._pending):
                if iterator and len(self._pending) < self.mapping.batch_size:
                    runs = self._activity.runs if self._activity is not None else 0
                    response = self._streams.get_records(ShardIterator=iterator, Limit=1000)
                    iterator = response.get("NextShardIterator")
                    if response.get("Records"):
                        last_read = time.monotonic()
                    for raw in response.get("Records", []):
                        record = lambda_shaped(raw, self.mapping.stream_arn)
                        if matches_any(self.mapping.patterns, record):
                            if not self._pending:
                                self._gathering_since = time.monotonic()
                            self._pending.append(record)
                if not self._pending:
                    self._send_held_replays()
                    idle = self._activity
                    if idle is not None and time.monotonic() - last_read >= idle.idle_after_seconds:
                        idle.wait_past(runs, idle.idle_poll_seconds)
                    else:
                        self._stop.wait(self._poll_interval)
                    continue
                if iterator and self._gathering(time.monotonic()):
                    self._stop.wait(self._poll_interval)
                    continue
                batches = self._next_batches()
                if len(batches) == 1:
                    self._deliver(batches[0], retries_used=0, invocations=0)
                else:
                    lanes = [
                        threading.Thread(target=self._deliver, args=(batch, 0, 0), name=f"{self.shard_id}-lane")
                        for batch in batches
                    ]
                    for lane in lanes:
                        lane.start()
                    for lane in lanes:
                        lane.join()
                for batch in batches:
                    self._after_batch(batch)
        except Exception:
            if not self._stop.is_set():
                logger.exception("stream poller for %s stopped", self.shard_id)
        finally:
            self.finished.set()

    def _next_batches(self) -> list[list[Record]]:
        """One batch per lane with pending records: its first records, in shard order."""
        factor = self.mapping.parallelization_factor
        if factor == 1:
            batch = self._pending[: self.mapping.batch_size]
            del self._pending[: len(batch)]
            return [batch]
        lanes: dict[int, list[Record]] = {}
        left: list[Record] = []
        for record in self._pending:
            lane = lanes.setdefault(lane_of(record, self.mapping.partition_key, factor), [])
            (lane if len(lane) < self.mapping.batch_size else left).append(record)
        self._pending = left
        return [batch for batch in lanes.values() if batch]

    def _gathering(self, now: float) -> bool:
        """Whether to wait for more records: the batch is not full and its window is still open."""
        window = self.mapping.batching_window_seconds
        return len(self._pending) < self.mapping.batch_size and now - self._gathering_since < window

    def _deliver(self, batch: list[Record], retries_used: int, invocations: int) -> None:
        """Invoke until the batch is done or discarded to the on-failure destination."""
        while batch and not self._stop.is_set():
            batch = self._drop_expired(batch, invocations)
            if not batch:
                return
            invocation = self._invoke(batch)
            invocations += 1
            self._stats.add(invocations=1, records_delivered=len(batch), failed_invocations=int(not invocation.ok))
            sequence_numbers = [record["dynamodb"]["SequenceNumber"] for record in batch]
            failed = _failed_ids(invocation, sequence_numbers) if invocation.ok else None
            if invocation.ok and not self.mapping.report_item_failures:
                failed = []
            log_invocation(self.mapping.function.function.short_name, len(batch), invocation, self._note(failed))
            if failed == []:
                return
            if failed is None and self.mapping.bisect and len(batch) > 1:
                half = len(batch) // 2
                self._deliver(batch[:half], retries_used, invocations)
                self._deliver(batch[half:], retries_used, invocations)
                return
            if failed:  # checkpoint at the lowest failed sequence number: what came before is done
                lowest = min(failed, key=int)
                batch = batch[sequence_numbers.index(lowest) :]
            retries_used += 1
            if 0 <= self.mapping.max_retry_attempts < retries_used:
                self._discard(batch, "RetryAttemptsExhausted", invocations, function_error=failed is None)
                return
            self._stop.wait(self._retry_delay(retries_used))

    def _invoke(self, batch: list[Record]) -> Invocation:
        event = {"Records": batch}
        if self._faults is None or not self._faults.deliver_twice_at_once(len(batch)):
            return self.mapping.function.invoke(event)
        # Two consumers on the same range at once; the checkpoint follows the first one's answer.
        twin = threading.Thread(target=self.mapping.function.invoke, args=(event,), daemon=True)
        twin.start()
        invocation = self.mapping.function.invoke(event)
        twin.join()
        return invocation

    def _after_batch(self, batch: list[Record]) -> None:
        self._send_held_replays()
        if self._faults is None:
            return
        if self._faults.deliver_again(len(batch)):
            log_invocation(self.mapping.function.function.short_name, len(batch), self._invoke(batch), "(duplicate)")
        if self._faults.replay_late(len(batch)):
            self._held_replays.append(batch)  # sent after the next batch: late and out of order

    def _send_held_replays(self) -> None:
        while self._held_replays and self.mapping.on_failure_arn:
            batch = self._held_replays.pop(0)
            message = on_failure_record(self.mapping, self.shard_id, batch, "RetryAttemptsExhausted", 1, False)
            self._send_on_failure(self.mapping.on_failure_arn, message)

    def _drop_expired(self, batch: list[Record], invocations: int) -> list[Record]:
        if self.mapping.max_record_age_seconds < 0:
            return batch
        oldest_allowed = time.time() - self.mapping.max_record_age_seconds
        fresh = [r for r in batch if r["dynamodb"].get("ApproximateCreationDateTime", time.time()) >= oldest_allowed]
        if len(fresh) < len(batch):
            expired = [r for r in batch if r not in fresh]
            self._discard(expired, "MaximumRecordAgeExceeded", invocations, function_error=False)
        return fresh

    def _discard(self, batch: list[Record], condition: str, invocations: int, function_error: bool) -> None:
        if self.mapping.on_failure_arn is None:
            logger.warning("discarding %d record(s) of %s: %s, no destination", len(batch), self.shard_id, condition)
            return
        message = on_failure_record(self.mapping, self.shard_id, batch, condition, invocations, function_error)
        self._send_on_failure(self.mapping.on_failure_arn, message)
        self._stats.add(sent_to_destination=1)
        logger.info("%-16s sent %d record(s) to the on-failure destination: %s", "stream", len(batch), condition)

    @staticmethod
    def _note(failed: list[str] | None) -> str:
        if failed is None:
            return "(whole batch failed)"
        return f"({len(failed)} item failure(s))" if failed else ""


def lambda_shaped(record: Mapping[str, Any], stream_arn: str) -> Record:
    """A GetRecords record as the event source mapping delivers it to the function: with its
    stream's ARN, and its creation time in epoch seconds."""
    shaped = dict(record)
    data = dict(record["dynamodb"])
    created = data.get("ApproximateCreationDateTime")
    if isinstance(created, datetime):
        data["ApproximateCreationDateTime"] = created.timestamp()
    shaped["dynamodb"] = data
    shaped["eventSourceARN"] = stream_arn
    return shaped


def lane_of(record: Record, partition_key: str, factor: int) -> int:
    """The lane of a record's partition key: the same key, the same lane, in every round."""
    keys = record.get("dynamodb", {}).get("Keys", {})
    partition = json.dumps(keys.get(partition_key), sort_keys=True)
    return int.from_bytes(hashlib.sha256(partition.encode()).digest()[:4], "big") % factor


def on_failure_record(
    mapping: StreamMapping,
    shard_id: str,
    batch: Sequence[Record],
    condition: str,
    invocations: int,
    function_error: bool,
) -> str:
    """The metadata Lambda sends to an on-failure destination for a stream batch (no records)."""
    first, last = batch[0]["dynamodb"], batch[-1]["dynamodb"]
    response_context: dict[str, Any] = {"statusCode": 200, "executedVersion": "$LATEST"}
    if function_error:
        response_context["functionError"] = "Unhandled"
    return json.dumps(
        {
            "requestContext": {
                "requestId": str(uuid.uuid4()),
                "functionArn": mapping.function.function.arn,
                "condition": condition,
                "approximateInvokeCount": invocations,
            },
            "responseContext": response_context,
            "version": "1.0",
            "timestamp": _iso(time.time(), milliseconds=True),
            "DDBStreamBatchInfo": {
                "shardId": shard_id,
                "startSequenceNumber": first["SequenceNumber"],
                "endSequenceNumber": last["SequenceNumber"],
                "approximateArrivalOfFirstRecord": _iso(first.get("ApproximateCreationDateTime", time.time())),
                "approximateArrivalOfLastRecord": _iso(last.get("ApproximateCreationDateTime", time.time())),
                "batchSize": len(batch),
                "streamArn": mapping.stream_arn,
            },
        }
    )


def _iso(epoch: float, milliseconds: bool = False) -> str:
    moment = datetime.fromtimestamp(epoch, UTC)
    return moment.isoformat(timespec="milliseconds" if milliseconds else "seconds").replace("+00:00", "Z")


# --- SQS ----------------------------------------------------------------------------------------


@dataclass(frozen=True)
class QueueMapping:
    uuid: str
    queue_arn: str
    queue_url: str
    function: FunctionPool
    batch_size: int
    report_item_failures: bool

    @classmethod
    def from_mapping(cls, mapping: Mapping[str, Any], function: FunctionPool, queue_url: str) -> QueueMapping:
        return cls(
            uuid=mapping["UUID"],
            queue_arn=mapping["EventSourceArn"],
            queue_url=queue_url,
            function=function,
            batch_size=int(mapping.get("BatchSize", 10)),
            report_item_failures="ReportBatchItemFailures" in mapping.get("FunctionResponseTypes", []),
        )


class QueuePoller:
    def __init__(
        self,
        mapping: QueueMapping,
        sqs: Any,
        stats: SourceStats,
        stop: threading.Event,
        retry_visibility_seconds: int | None,
    ) -> None:
        self.mapping = mapping
        self._sqs = sqs
        self._stats = stats
        self._stop = stop
        # None: failed messages wait out the queue's visibility timeout, as on AWS.
        self._retry_visibility = retry_visibility_seconds

    def run(self) -> None:
        while not self._stop.is_set():
            try:
                self._poll_once()
            except Exception:
                if self._stop.is_set():
                    return
                logger.exception("queue poller for %s failed; polling again", self.mapping.queue_arn)
                self._stop.wait(1)

    def _poll_once(self) -> None:
        messages = self._sqs.receive_message(
            QueueUrl=self.mapping.queue_url,
            MaxNumberOfMessages=min(self.mapping.batch_size, 10),
            WaitTimeSeconds=1,
            AttributeNames=["All"],
            MessageAttributeNames=["All"],
        ).get("Messages", [])
        if not messages:
            return
        event = {"Records": [self._record(message) for message in messages]}
        invocation = self.mapping.function.invoke(event)
        ids = [message["MessageId"] for message in messages]
        failed = _failed_ids(invocation, ids) if invocation.ok else None
        if invocation.ok and not self.mapping.report_item_failures:
            failed = []
        failed_set = set(ids) if failed is None else set(failed)
        done = [m for m in messages if m["MessageId"] not in failed_set]
        if done:
            self._sqs.delete_message_batch(
                QueueUrl=self.mapping.queue_url,
                Entries=[{"Id": str(i), "ReceiptHandle": m["ReceiptHandle"]} for i, m in enumerate(done)],
            )
        if self._retry_visibility is not None:
            for message in messages:
                if message["MessageId"] in failed_set:
                    self._sqs.change_message_visibility(
                        QueueUrl=self.mapping.queue_url,
                        ReceiptHandle=message["ReceiptHandle"],
                        VisibilityTimeout=self._retry_visibility,
                    )
        self._stats.add(
            invocations=1,
            failed_invocations=int(not invocation.ok),
            records_delivered=len(messages),
            deleted_messages=len(done),
        )
        note = f"({len(failed_set)} message(s) left for retry)" if failed_set else ""
        log_invocation(self.mapping.function.function.short_name, len(messages), invocation, note)

    def _record(self, message: Mapping[str, Any]) -> dict[str, Any]:
        region = self.mapping.queue_arn.split(":")[3]
        return {
            "messageId": message["MessageId"],
            "receiptHandle": message["ReceiptHandle"],
            "body": message["Body"],
            "attributes": message.get("Attributes", {}),
            "messageAttributes": message.get("MessageAttributes", {}),
            "md5OfBody": message.get("MD5OfBody", ""),
            "eventSource": "aws:sqs",
            "eventSourceARN": self.mapping.queue_arn,
            "awsRegion": region,
        }
