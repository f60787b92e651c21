"""The stream event source's rules: checkpointing, retries, bisect, record age, on-failure records."""

from __future__ import annotations

import json
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import pytest

from local.event_sources import Activity, SourceStats, StreamMapping, StreamShardPoller, lane_of
from local.functions import DeployedFunction, Invocation

STREAM_ARN = "arn:aws:dynamodb:us-east-1:000000000000:table/t/stream/2026-11-22T00:00:00.000"
DESTINATION = "arn:aws:sqs:us-east-1:000000000000:dlq1"


def record(seq: int, age_seconds: float = 0) -> dict[str, Any]:
    return {
        "eventName": "INSERT",
        "eventSourceARN": STREAM_ARN,
        "dynamodb": {"SequenceNumber": str(seq), "ApproximateCreationDateTime": time.time() - age_seconds},
    }


@dataclass
class ScriptedFunction:
    """Stands in for a FunctionPool: answers with `behaviour(sequence numbers)` and records batches."""

    behaviour: Callable[[list[str]], Invocation]
    batches: list[list[str]] = field(default_factory=list)
    function: DeployedFunction = field(
        default_factory=lambda: DeployedFunction(
            "consumer",
            "arn:aws:lambda:us-east-1:000000000000:function:consumer",
            "functions.stream_consumer.handler.handler",
            30,
            512,
            {},
        )
    )

    def invoke(self, event: dict[str, Any]) -> Invocation:
        sequence_numbers = [r["dynamodb"]["SequenceNumber"] for r in event["Records"]]
        self.batches.append(sequence_numbers)
        return self.behaviour(sequence_numbers)


def ok() -> Invocation:
    return Invocation(ok=True, payload={"batchItemFailures": []})


def item_failures(*ids: str) -> Invocation:
    return Invocation(ok=True, payload={"batchItemFailures": [{"itemIdentifier": i} for i in ids]})


def function_error() -> Invocation:
    return Invocation(ok=False, error_type="BatchProcessingError", error_message="All records failed")


def poller(function: ScriptedFunction, sent: list[tuple[str, dict[str, Any]]], **settings: Any) -> StreamShardPoller:
    mapping = StreamMapping(
        uuid="esm-1",
        stream_arn=STREAM_ARN,
        function=function,  # type: ignore[arg-type]
        batch_size=settings.get("batch_size", 100),
        batching_window_seconds=settings.get("batching_window_seconds", 0),
        starting_position="TRIM_HORIZON",
        patterns=[],
        report_item_failures=settings.get("report_item_failures", True),
        bisect=settings.get("bisect", True),
        max_retry_attempts=settings.get("max_retry_attempts", 2),
        max_record_age_seconds=settings.get("max_record_age_seconds", 3600),
        on_failure_arn=DESTINATION,
        partition_key="pk",
        parallelization_factor=settings.get("parallelization_factor", 1),
    )
    return StreamShardPoller(
        mapping,
        "shardId-1",
        streams=settings.get("streams"),
        send_on_failure=lambda arn, body: sent.append((arn, json.loads(body))),
        stats=SourceStats(),
        stop=threading.Event(),
        poll_interval=settings.get("poll_interval", 0),
        retry_delay=lambda _: 0,
        activity=settings.get("activity"),
    )


def deliver(poller_: StreamShardPoller, sequence_numbers: list[int]) -> None:
    poller_._deliver([record(seq) for seq in sequence_numbers], retries_used=0, invocations=0)


def test_a_successful_batch_is_invoked_once() -> None:
    sent: list[Any] = []
    function = ScriptedFunction(lambda _: ok())
    deliver(poller(function, sent), [1, 2, 3])
    assert function.batches == [["1", "2", "3"]]
    assert sent == []


def test_partial_failure_retries_from_the_lowest_failed_sequence_number() -> None:
    sent: list[Any] = []
    answers = iter([item_failures("3", "2"), ok()])
    function = ScriptedFunction(lambda _: next(answers))
    deliver(poller(function, sent), [1, 2, 3, 4])
    assert function.batches == [["1", "2", "3", "4"], ["2", "3", "4"]]
    assert sent == []


def test_retries_exhausted_send_aws_metadata_to_the_destination() -> None:
    sent: list[Any] = []
    function = ScriptedFunction(lambda _: item_failures("3"))
    deliver(poller(function, sent, max_retry_attempts=2), [1, 2, 3, 4])
    assert function.batches == [["1", "2", "3", "4"], ["3", "4"], ["3", "4"]]  # first try + 2 retries
    [(arn, message)] = sent
    assert arn == DESTINATION
    assert set(message) == {"requestContext", "responseContext", "version", "timestamp", "DDBStreamBatchInfo"}
    assert message["requestContext"]["condition"] == "RetryAttemptsExhausted"
    assert message["requestContext"]["approximateInvokeCount"] == 3
    assert message["requestContext"]["functionArn"] == function.function.arn
    info = message["DDBStreamBatchInfo"]
    assert (info["shardId"], info["startSequenceNumber"], info["endSequenceNumber"]) == ("shardId-1", "3", "4")
    assert (info["batchSize"], info["streamArn"]) == (2, STREAM_ARN)
    assert info["approximateArrivalOfFirstRecord"].endswith("Z")


@pytest.mark.parametrize(
    "payload",
    [{"batchItemFailures": [{"itemIdentifier": ""}]}, {"batchItemFailures": [{"itemIdentifier": "99"}]}, "nonsense"],
)
def test_an_invalid_partial_response_fails_the_whole_batch(payload: Any) -> None:
    sent: list[Any] = []
    function = ScriptedFunction(lambda _: Invocation(ok=True, payload=payload))
    deliver(poller(function, sent, bisect=False, max_retry_attempts=1), [1, 2])
    assert function.batches == [["1", "2"], ["1", "2"]]
    assert sent[0][1]["DDBStreamBatchInfo"]["startSequenceNumber"] == "1"


def test_bisect_isolates_the_failing_record_without_using_up_retries() -> None:
    sent: list[Any] = []
    function = ScriptedFunction(lambda seqs: function_error() if "3" in seqs else ok())
    deliver(poller(function, sent, max_retry_attempts=1), [1, 2, 3, 4])
    assert function.batches == [["1", "2", "3", "4"], ["1", "2"], ["3", "4"], ["3"], ["3"], ["4"]]
    [(_, message)] = sent
    info = message["DDBStreamBatchInfo"]
    assert (info["startSequenceNumber"], info["endSequenceNumber"], info["batchSize"]) == ("3", "3", 1)
    assert message["responseContext"]["functionError"] == "Unhandled"


def test_without_bisect_a_function_error_retries_the_whole_batch() -> None:
    sent: list[Any] = []
    function = ScriptedFunction(lambda _: function_error())
    deliver(poller(function, sent, bisect=False, max_retry_attempts=0), [1, 2])
    assert function.batches == [["1", "2"]]
    assert sent[0][1]["DDBStreamBatchInfo"]["batchSize"] == 2


def test_item_failures_are_ignored_unless_the_mapping_reports_them() -> None:
    sent: list[Any] = []
    function = ScriptedFunction(lambda _: item_failures("1"))
    deliver(poller(function, sent, report_item_failures=False), [1, 2])
    assert function.batches == [["1", "2"]]
    assert sent == []


def test_records_past_their_maximum_age_are_sent_on_without_an_invocation() -> None:
    sent: list[Any] = []
    function = ScriptedFunction(lambda _: ok())
    poller(function, sent, max_record_age_seconds=60)._deliver(
        [record(1, age_seconds=120), record(2)], retries_used=0, invocations=0
    )
    assert function.batches == [["2"]]
    [(_, message)] = sent
    assert message["requestContext"]["condition"] == "MaximumRecordAgeExceeded"
    assert message["DDBStreamBatchInfo"]["startSequenceNumber"] == "1"


@dataclass
class TrickleStream:
    """A stream shard that yields one scripted poll's records per GetRecords, then nothing."""

    polls: list[list[int]]
    read_at: list[float] = field(default_factory=list)

    def get_shard_iterator(self, **_: Any) -> dict[str, str]:
        return {"ShardIterator": "open"}

    def get_records(self, **_: Any) -> dict[str, Any]:
        self.read_at.append(time.monotonic())
        found = self.polls.pop(0) if self.polls else []
        raw = [{"eventName": "INSERT", "dynamodb": {"SequenceNumber": str(seq)}} for seq in found]
        return {"Records": raw, "NextShardIterator": "open"}


def run_until(poller_: StreamShardPoller, function: ScriptedFunction, batches: int, records: int = 0) -> float:
    """Runs the poller until `batches` invocations were made and they held `records` records at
    least; the seconds that took."""
    started = time.monotonic()
    thread = threading.Thread(target=poller_.run, daemon=True)
    thread.start()
    while (
        len(function.batches) < batches or sum(map(len, function.batches)) < records
    ) and time.monotonic() - started < 10:
        time.sleep(0.01)
    elapsed = time.monotonic() - started
    poller_._stop.set()
    thread.join(5)
    return elapsed


def test_without_a_batching_window_each_poll_is_invoked_at_once() -> None:
    function = ScriptedFunction(lambda _: ok())
    stream = TrickleStream([[1], [2], [3]])
    run_until(poller(function, [], streams=stream, poll_interval=0.01), function, batches=3)
    assert function.batches == [["1"], ["2"], ["3"]]


class WatchedActivity(Activity):
    """An Activity that tells when a poller starts waiting on it, and for how long at most."""

    def __init__(self, **settings: float) -> None:
        super().__init__(**settings)
        self.waits: list[float] = []
        self.waiting = threading.Event()

    def wait_past(self, runs: int, seconds: float) -> None:
        self.waits.append(seconds)
        self.waiting.set()
        super().wait_past(runs, seconds)


def test_an_idle_poller_stops_polling_until_a_function_has_run() -> None:
    """A poller that read nothing for `idle_after_seconds` waits for a run of one of the runtime's
    functions (or its idle poll, a minute here) instead of polling every interval; the run wakes it."""
    second_batch = threading.Event()

    def answer(sequence_numbers: list[str]) -> Invocation:
        if sequence_numbers == ["2"]:
            second_batch.set()
        return ok()

    function = ScriptedFunction(answer)
    stream = TrickleStream([[1]])
    activity = WatchedActivity(idle_after_seconds=0.05, idle_poll_seconds=60)
    poller_ = poller(function, [], streams=stream, poll_interval=0.01, activity=activity)
    thread = threading.Thread(target=poller_.run, daemon=True)
    thread.start()
    try:
        assert activity.waiting.wait(10), stream.read_at  # idle once record 1 is delivered
        assert function.batches == [["1"]]
        assert activity.waits == [60]  # not the interval's 0.01 s
        stream.polls.append([2])
        activity.note()  # a function ran: a run noted before the wait began ends it too
        assert second_batch.wait(10), "the run did not wake the idle poller"
        assert function.batches == [["1"], ["2"]]
    finally:
        poller_._stop.set()
        activity.note()
        thread.join(5)
    assert not thread.is_alive()


def test_a_batching_window_gathers_records_until_it_closes() -> None:
    function = ScriptedFunction(lambda _: ok())
    stream = TrickleStream([[1], [2], [3]])
    elapsed = run_until(
        poller(function, [], streams=stream, poll_interval=0.01, batching_window_seconds=0.5), function, 1
    )
    assert function.batches == [["1", "2", "3"]]
    assert elapsed >= 0.5


def test_a_full_batch_goes_out_before_its_window_closes() -> None:
    function = ScriptedFunction(lambda _: ok())
    stream = TrickleStream([[1], [2], [3]])
    settings = {"streams": stream, "poll_interval": 0.01, "batching_window_seconds": 60, "batch_size": 2}
    elapsed = run_until(poller(function, [], **settings), function, batches=1)
    assert function.batches == [["1", "2"]]
    assert elapsed < 10


@dataclass
class KeyedStream:
    """One poll of records (sequence number, partition key), then nothing."""

    records: list[tuple[int, str]]

    def get_shard_iterator(self, **_: Any) -> dict[str, str]:
        return {"ShardIterator": "open"}

    def get_records(self, **_: Any) -> dict[str, Any]:
        found, self.records = self.records, []
        raw = [
            {"eventName": "INSERT", "dynamodb": {"SequenceNumber": str(seq), "Keys": {"pk": {"S": key}}}}
            for seq, key in found
        ]
        return {"Records": raw, "NextShardIterator": "open"}


def test_a_parallelization_factor_runs_lanes_at_once_and_keeps_each_keys_order() -> None:
    """ParallelizationFactor 2: batches of different lanes run at the same time (the first two
    meet at a barrier, which would time out if they ran one after the other), and each partition
    key's records go out in shard order, one lane per key."""
    keys = [f"ACCOUNT#a{index}" for index in range(8)]
    lanes = {key: lane_of({"dynamodb": {"Keys": {"pk": {"S": key}}}}, "pk", 2) for key in keys}
    assert set(lanes.values()) == {0, 1}  # the keys spread over both lanes
    records = [(seq, keys[seq % len(keys)]) for seq in range(1, 61)]
    key_of = {str(seq): key for seq, key in records}
    both_running = threading.Barrier(2, timeout=5)
    met: list[bool] = []

    def behaviour(sequence_numbers: list[str]) -> Invocation:
        if len(met) < 2:
            try:
                both_running.wait()
                met.append(True)
            except threading.BrokenBarrierError:
                met.append(False)
        return ok()

    function = ScriptedFunction(behaviour)
    settings = {"streams": KeyedStream(records), "poll_interval": 0.01, "batch_size": 10, "parallelization_factor": 2}
    source = poller(function, [], **settings)
    # Every record, not six batches: a lane's last batch holds what is left of its keys' records, so
    # the sixty may take a seventh batch, which a stop after the sixth would cut off.
    run_until(source, function, batches=6, records=len(records))
    assert met == [True, True]
    for batch in function.batches:
        assert len({lanes[key_of[seq]] for seq in batch}) == 1  # one lane per batch
    delivered = [seq for batch in function.batches for seq in batch]
    assert sorted(delivered, key=int) == [str(seq) for seq, _ in records]  # each once
    for key in keys:
        order = [int(seq) for seq in delivered if key_of[seq] == key]
        assert order == sorted(order), key
