"""Usage events under chaos (docs/events.md): the crossings the outbox holds are exactly those the
eventual counter's path made, and the bus delivered each of them.

The truth is the table's stream: every write of a counter shard item is a record of its new count,
in commit order (the emulator's stream has one shard, so records of every partition key are in one
order). Replaying those counts gives each quota's exact usage path, and the crossings of its
boundaries along it, in order. The outbox items must be those crossings, one each, numbered 1, 2,
3... without gaps, each usage on the right side of its boundary; and a queue subscribed to the bus
must have received every one of them (by id; at-least-once delivery may bring copies), the first
copies of a quota's events in seq order.
"""

from __future__ import annotations

import json
import uuid
from collections import defaultdict
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

from chaos.checks import Check
from functions.adapters import keys
from functions.adapters.attributes import from_attributes
from functions.adapters.table_layout import PARTITION_KEY, SORT_KEY
from functions.core.model import Quota
from functions.core.thresholds import DEFAULT_THRESHOLDS, Bands
from functions.events.models import SOURCE, UsageThresholdCrossed


class Subscriber:
    """A queue subscribed to the stack's bus by a rule of its own, read as the run goes."""

    def __init__(self, client: Callable[[str], Any], bus: str) -> None:
        self._events, self._sqs = client("events"), client("sqs")
        name = f"chaos-subscriber-{uuid.uuid4().hex[:8]}"
        self._queue_url = self._sqs.create_queue(QueueName=name)["QueueUrl"]
        arn = self._sqs.get_queue_attributes(QueueUrl=self._queue_url, AttributeNames=["QueueArn"])["Attributes"]
        # The crossings: what the checks are of (Limit Refused events come from the API's logs).
        pattern = {"source": [SOURCE], "detail-type": [UsageThresholdCrossed.DETAIL_TYPE]}
        self._events.put_rule(Name=name, EventBusName=bus, EventPattern=json.dumps(pattern))
        self._events.put_targets(Rule=name, EventBusName=bus, Targets=[{"Id": "queue", "Arn": arn["QueueArn"]}])
        self.received: list[dict[str, Any]] = []  # every copy, in arrival order

    def receive(self) -> list[dict[str, Any]]:
        while messages := self._sqs.receive_message(QueueUrl=self._queue_url, MaxNumberOfMessages=10).get(
            "Messages", []
        ):
            for message in messages:
                self.received.append(json.loads(message["Body"])["detail"])
                self._sqs.delete_message(QueueUrl=self._queue_url, ReceiptHandle=message["ReceiptHandle"])
        return self.received


def stream_records(streams: Any, stream_arn: str) -> list[dict[str, Any]]:
    """Every record of the stream, shard by shard, oldest first."""
    records: list[dict[str, Any]] = []
    for shard in streams.describe_stream(StreamArn=stream_arn)["StreamDescription"]["Shards"]:
        iterator = streams.get_shard_iterator(
            StreamArn=stream_arn, ShardId=shard["ShardId"], ShardIteratorType="TRIM_HORIZON"
        )["ShardIterator"]
        while iterator:
            page = streams.get_records(ShardIterator=iterator, Limit=1000)
            records += page["Records"]
            if not page["Records"]:
                break
            iterator = page.get("NextShardIterator")
    return records


Crossings = list[tuple[int, str]]  # (threshold, direction), in order


def event_quota(event: Mapping[str, Any]) -> Quota:
    return Quota(str(event["accountId"]), str(event["resourceType"]))


@dataclass
class Path:
    """One quota's usage along the stream: its counter shards' counts, and the crossings so far."""

    counts: dict[str, int] = field(default_factory=dict)  # counter item key -> count
    crossings: Crossings = field(default_factory=list)


def expected_crossings(records: Iterable[Mapping[str, Any]], limits: Mapping[Quota, int]) -> dict[Quota, Crossings]:
    """Each quota's crossings along its exact usage path, from the counter items' writes (the
    quota from the item's partition key: a type's counter shards are its own)."""
    paths: dict[Quota, Path] = defaultdict(Path)
    for record in records:
        data = record["dynamodb"]
        key = from_attributes(data["Keys"])
        if key[SORT_KEY] != keys.COUNTER_SORT_KEY or record["eventName"] == "REMOVE":
            continue
        image = from_attributes(data.get("NewImage", {}))
        quota = keys.quota_of(str(key[PARTITION_KEY]))
        if quota is None or quota not in limits:
            continue
        path = paths[quota]
        before = sum(path.counts.values())
        path.counts[str(key[PARTITION_KEY])] = int(image.get("count", 0))
        after = sum(path.counts.values())
        bands = Bands(limits[quota], DEFAULT_THRESHOLDS)
        for threshold in sorted(bands.thresholds, reverse=after < before):
            boundary = bands.boundary(threshold)
            if before < boundary <= after:
                path.crossings.append((threshold, "up"))
            elif after < boundary <= before:
                path.crossings.append((threshold, "down"))
    return {quota: path.crossings for quota, path in paths.items()}


def event_checks(
    outbox: Mapping[Quota, list[dict[str, Any]]],
    expected: Mapping[Quota, Crossings],
    received: list[dict[str, Any]],
    limits: Mapping[Quota, int],
) -> list[Check]:
    exact = Check("usage events: each quota's outbox holds exactly the crossings of its counter's path, in order")
    numbered = Check("usage events: each quota's events are numbered 1, 2, 3... and no two share an id")
    sided = Check("usage events: each event's usage is on its direction's side of the boundary")
    delivered = Check("usage events: the bus delivered every event (by id), nothing else, first copies in seq order")
    ids: set[str] = set()
    for quota, limit in limits.items():
        events = outbox.get(quota, [])
        found = [(event["threshold"], event["direction"]) for event in events]
        exact.expect(
            found == expected.get(quota, []),
            f"{quota}: outbox {found}, counter path {expected.get(quota, [])}",
        )
        numbered.expect(
            [event["seq"] for event in events] == list(range(1, len(events) + 1)), f"{quota}: seqs not 1..n"
        )
        bands = Bands(limit, DEFAULT_THRESHOLDS)
        for event in events:
            numbered.expect(event["eventId"] not in ids, f"{quota}: id {event['eventId']} twice")
            ids.add(event["eventId"])
            above = event["usage"] >= bands.boundary(event["threshold"])
            sided.expect(above == (event["direction"] == "up"), f"{quota}: {event}")
        firsts: list[int] = []
        seen: set[str] = set()
        for event in received:
            if event_quota(event) == quota and event["eventId"] not in seen:
                seen.add(event["eventId"])
                firsts.append(event["seq"])
        delivered.expect(firsts == sorted(firsts), f"{quota}: first copies in the order {firsts}")
    got = {event["eventId"] for event in received if event_quota(event) in limits}
    delivered.expect(got == ids, f"missing {sorted(ids - got)[:5]}, unknown {sorted(got - ids)[:5]}")
    return [exact, numbered, sided, delivered]
