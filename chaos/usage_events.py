"""Usage events under chaos (docs/events.md): the crossings the outbox holds are exactly those the
eventual counter's path made, every landed limit change has its event, and the bus delivered each.

The truth is the table's stream: every write of a counter shard item is a record of its new count,
and every write of a quota's account item a record of its limit, in commit order (the emulator's
stream has one shard, so records of every partition key are in one order). Replaying them gives
each quota's exact usage path and its limits. While a quota's limit stands as first set, the
outbox must hold exactly the crossings of its boundaries along that path, in order. A limit change
is decided after it lands, from what was announced to where the usage then stands (docs/events.md,
"How a crossing is found"), so past a quota's first change the crossings are not a function of the
path alone; there each threshold's crossings must alternate up, down, up..., and once the run is
quiet what was announced last must be where the exact usage stands against the final limit. Every
crossing is numbered 1, 2, 3... without gaps with its usage on its direction's side of the
boundary of the limit it names; each landed change of a limit is one Limit Changed event with the
old and new limits; and a queue subscribed to the bus must have received every event (by id;
at-least-once delivery may bring copies), the first copies of a quota's crossings in seq order.

Limit Refused events are checked against the API's own refusal lines (its log file: what
CloudWatch Logs sends the aggregator): every line counted in its quota's events, once.
"""

from __future__ import annotations

import json
import uuid
from collections import Counter, defaultdict
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any

from chaos.checks import Check
from functions.adapters import keys
from functions.adapters.account_item import shard_state
from functions.adapters.attributes import from_attributes
from functions.adapters.table_layout import PARTITION_KEY, SORT_KEY
from functions.core.model import Quota
from functions.core.refusals import parse_refusal
from functions.core.thresholds import DEFAULT_THRESHOLDS, Bands
from functions.usage_events.models import SOURCE, LimitChanged, LimitRefused, UsageThresholdCrossed


class Subscriber:
    """A queue subscribed to the stack's bus by a rule of its own, read as the run goes."""

    def __init__(self, client: Callable[[str], Any], bus: str) -> None:
        self._events, self._sqs = client("events"), client("sqs")
        name = f"chaos-subscriber-{uuid.uuid4().hex[:8]}"
        self._queue_url = self._sqs.create_queue(QueueName=name)["QueueUrl"]
        arn = self._sqs.get_queue_attributes(QueueUrl=self._queue_url, AttributeNames=["QueueArn"])["Attributes"]
        self._events.put_rule(Name=name, EventBusName=bus, EventPattern=json.dumps({"source": [SOURCE]}))
        self._events.put_targets(Rule=name, EventBusName=bus, Targets=[{"Id": "queue", "Arn": arn["QueueArn"]}])
        self.received: list[dict[str, Any]] = []  # every copy, in arrival order: EventBridge's envelopes

    def receive(self) -> list[dict[str, Any]]:
        while messages := self._sqs.receive_message(QueueUrl=self._queue_url, MaxNumberOfMessages=10).get(
            "Messages", []
        ):
            for message in messages:
                self.received.append(json.loads(message["Body"]))
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
    """The quota an event is of: a periodic quota's period's when it carries `periodStart`."""
    quota = Quota(str(event["accountId"]), str(event["resourceType"]))
    start = event.get("periodStart")
    if not start:
        return quota
    return quota.in_period(datetime.fromisoformat(str(start)).astimezone(UTC).strftime("%Y%m%dT%H%M%SZ"))


@dataclass
class Path:
    """One quota along the stream: its counter shards' counts, its limit, and its crossings while
    that limit stood as first set."""

    counts: dict[str, int] = field(default_factory=dict)  # counter item key -> count
    admitted: dict[str, int] = field(default_factory=dict)  # admission shard item key -> admitted
    limit: int | None = None
    changed: bool = False  # its limit was changed: the crossings past that are not replayed
    crossings: Crossings = field(default_factory=list)


@dataclass
class StreamTruth:
    """What the stream says of each quota: its crossings while its limit stood as first set, its
    landed limit changes, and how far above its limit each limit version may leave it."""

    crossings: dict[Quota, Crossings] = field(default_factory=dict)
    changed: set[Quota] = field(default_factory=set)
    changes: dict[Quota, list[tuple[int, int, int]]] = field(default_factory=dict)  # (version, old, new)
    # The most a quota may hold under each limit version: its limit, or, when a change lowered the
    # limit below what was admitted over its admission shards (a retired shard keeps its admitted
    # until its resources go), that: no create is admitted until the usage is below the limit.
    ceilings: dict[tuple[Quota, int], int] = field(default_factory=dict)

    def ceiling(self, quota: Quota, limit_version: int, limit: int) -> int:
        return max(limit, self.ceilings.get((quota, limit_version), limit))


def replay(records: Iterable[Mapping[str, Any]], quotas: Iterable[Quota]) -> StreamTruth:
    """Each quota's limits and exact usage path, from its account item's and counter items' writes
    (the quota from the item's partition key: a type's counter shards are its own)."""
    wanted = set(quotas)
    paths: dict[Quota, Path] = defaultdict(Path)
    truth = StreamTruth()
    for record in records:
        data = record["dynamodb"]
        key = from_attributes(data["Keys"])
        quota = keys.quota_of(str(key[PARTITION_KEY]))
        if quota is None or quota not in wanted:
            continue
        path = paths[quota]
        if key[SORT_KEY] in (keys.ACCOUNT_SORT_KEY, keys.SHARD_SORT_KEY):
            if record["eventName"] == "REMOVE":
                path.admitted.pop(str(key[PARTITION_KEY]), None)
                continue
            new = shard_state(from_attributes(data["NewImage"]))
            path.admitted[str(key[PARTITION_KEY])] = new.admitted
        if record["eventName"] == "REMOVE":
            continue
        if key[SORT_KEY] == keys.ACCOUNT_SORT_KEY:
            old = shard_state(from_attributes(data["OldImage"])) if "OldImage" in data else None
            if old is None:
                ceiling = new.limit
            elif old.limit != new.limit:
                path.changed = True
                truth.changes.setdefault(quota, []).append((new.limit_version, old.limit, new.limit))
                ceiling = max(new.limit, sum(path.admitted.values()))
            else:  # the limit stood (a new version or not): so does what it allowed
                ceiling = truth.ceiling(quota, old.limit_version, old.limit)
            truth.ceilings[(quota, new.limit_version)] = ceiling
            path.limit = new.limit
            continue
        if key[SORT_KEY] != keys.COUNTER_SORT_KEY:
            continue
        before = sum(path.counts.values())
        path.counts[str(key[PARTITION_KEY])] = int(from_attributes(data.get("NewImage", {})).get("count", 0))
        after = sum(path.counts.values())
        if path.changed or path.limit is None:
            continue
        bands = Bands(path.limit, DEFAULT_THRESHOLDS)
        for threshold in sorted(bands.thresholds, reverse=after < before):
            boundary = bands.boundary(threshold)
            if before < boundary <= after:
                path.crossings.append((threshold, "up"))
            elif after < boundary <= before:
                path.crossings.append((threshold, "down"))
    truth.crossings = {quota: path.crossings for quota, path in paths.items()}
    truth.changed = {quota for quota, path in paths.items() if path.changed}
    return truth


def announced(crossings: Iterable[Mapping[str, Any]]) -> frozenset[int]:
    """The thresholds a quota's crossings, in seq order, last announced as reached."""
    above: set[int] = set()
    for event in crossings:
        (above.add if event["direction"] == "up" else above.discard)(int(event["threshold"]))
    return frozenset(above)


def reached(usage: int, limit: int) -> frozenset[int]:
    return Bands(limit, DEFAULT_THRESHOLDS).above(usage)


@dataclass(frozen=True)
class QuotaEvents:
    """A quota's outbox once the run is quiet, with its exact usage and limit then."""

    crossings: list[dict[str, Any]]  # in seq order
    limit_changes: list[dict[str, Any]]
    usage: int
    limit: int

    @property
    def settled(self) -> bool:
        """What was announced last is where the usage stands against the limit."""
        return announced(self.crossings) == reached(self.usage, self.limit)


def delivered(received: Iterable[Mapping[str, Any]], detail_type: str) -> list[dict[str, Any]]:
    """The details of the events of one type a subscriber received, every copy, in arrival order."""
    return [dict(event["detail"]) for event in received if event["detail-type"] == detail_type]


def event_checks(
    quotas: Mapping[Quota, QuotaEvents], truth: StreamTruth, received: list[dict[str, Any]]
) -> list[Check]:
    exact = Check(
        "usage events: each quota's outbox holds exactly the crossings of its counter's path while its limit stood"
    )
    walked = Check("usage events: each threshold's crossings alternate up, down, up... from none")
    settled = Check("usage events: once quiet, the last crossings announced are where the usage stands")
    numbered = Check("usage events: each quota's events are numbered 1, 2, 3... and no two share an id")
    sided = Check("usage events: each event's usage is on its direction's side of its limit's boundary")
    changes = Check("usage events: each landed limit change is one Limit Changed event, old and new limits as written")
    complete = Check("usage events: the bus delivered every event (by id), nothing else, first copies in seq order")
    ids: set[str] = set()
    crossings_received = delivered(received, UsageThresholdCrossed.DETAIL_TYPE)
    for quota, outbox in quotas.items():
        events = outbox.crossings
        found = [(event["threshold"], event["direction"]) for event in events]
        expected = truth.crossings.get(quota, [])
        if quota in truth.changed:
            found = found[: len(expected)]
        exact.expect(found == expected, f"{quota}: outbox {found}, counter path {expected}")
        for threshold in DEFAULT_THRESHOLDS:
            directions = [event["direction"] for event in events if event["threshold"] == threshold]
            alternating = ["up", "down"] * len(directions)
            walked.expect(directions == alternating[: len(directions)], f"{quota}: {threshold}% went {directions}")
        settled.expect(
            outbox.settled,
            f"{quota}: announced {sorted(announced(events))}, usage {outbox.usage} of {outbox.limit} "
            f"reaches {sorted(reached(outbox.usage, outbox.limit))}",
        )
        numbered.expect(
            [event["seq"] for event in events] == list(range(1, len(events) + 1)), f"{quota}: seqs not 1..n"
        )
        for event in events:
            numbered.expect(event["eventId"] not in ids, f"{quota}: id {event['eventId']} twice")
            ids.add(event["eventId"])
            above = event["usage"] >= Bands(event["limit"], DEFAULT_THRESHOLDS).boundary(event["threshold"])
            sided.expect(above == (event["direction"] == "up"), f"{quota}: {event}")
        written = sorted((c["limitVersion"], c["oldLimit"], c["newLimit"]) for c in outbox.limit_changes)
        changes.expect(
            written == truth.changes.get(quota, []),
            f"{quota}: outbox {written}, the stream's changes {truth.changes.get(quota, [])}",
        )
        for change in outbox.limit_changes:
            changes.expect(change["eventId"] not in ids, f"{quota}: id {change['eventId']} twice")
            ids.add(change["eventId"])
        firsts: list[int] = []
        seen: set[str] = set()
        for event in crossings_received:
            if event_quota(event) == quota and event["eventId"] not in seen:
                seen.add(event["eventId"])
                firsts.append(event["seq"])
        complete.expect(firsts == sorted(firsts), f"{quota}: first copies in the order {firsts}")
    kinds = (UsageThresholdCrossed.DETAIL_TYPE, LimitChanged.DETAIL_TYPE)
    got = {
        str(event["detail"]["eventId"])
        for event in received
        if event["detail-type"] in kinds and event_quota(event["detail"]) in quotas
    }
    complete.expect(got == ids, f"missing {sorted(ids - got)[:5]}, unknown {sorted(got - ids)[:5]}")
    return [exact, walked, settled, numbered, sided, changes, complete]


def refusal_lines(api_log: str) -> tuple[Counter[Quota], Counter[Quota]]:
    """The creates (and growing resizes) the API refused, per quota, as its log lines tell them:
    what CloudWatch Logs sends the aggregator (functions/core/refusals.py); and the units they
    asked for."""
    lines: Counter[Quota] = Counter()
    units: Counter[Quota] = Counter()
    with open(api_log, encoding="utf-8") as log:
        for line in log:
            refusal = parse_refusal(line, datetime.now(UTC), "")
            if refusal is not None:
                lines[refusal.quota] += 1
                units[refusal.quota] += refusal.units
    return lines, units


def refusals_announced(events: Iterable[Mapping[str, Any]]) -> int:
    return sum(int(event["refused"]) for event in events)


def refused_units_announced(events: Iterable[Mapping[str, Any]]) -> int:
    return sum(int(event["refusedUnits"]) for event in events)


def refusal_checks(
    announced: Mapping[Quota, list[dict[str, Any]]],
    lines: Counter[Quota],
    answered: Mapping[Quota, int],
    received: list[dict[str, Any]],
    line_units: Counter[Quota],
    answered_units: Mapping[Quota, int],
) -> list[Check]:
    """Limit Refused events (docs/events.md, "Refused creates"): every refusal line of the API is
    counted in its quota's events, once, with the units it asked for; one event per quota and
    minute; each delivered; and every 409 LimitExceeded a client was answered (a create's, or a
    growing resize's) is a refusal line, of the units it asked for."""
    counted = Check("limit refused: each quota's events count every refusal line of the API, once")
    once = Check("limit refused: at most one event per quota and minute, no two sharing an id, each delivered")
    logged = Check("limit refused: every 409 LimitExceeded a client was answered is a refusal line of the API")
    delivered_ids = {str(event["eventId"]) for event in delivered(received, LimitRefused.DETAIL_TYPE)}
    ids: set[str] = set()
    for quota, events in announced.items():
        counted.expect(
            refusals_announced(events) == lines[quota] and refused_units_announced(events) == line_units[quota],
            f"{quota}: {refusals_announced(events)} refusals of {refused_units_announced(events)} unit(s) announced, "
            f"{lines[quota]} of {line_units[quota]} logged",
        )
        minutes = [event["windowStart"] for event in events]
        once.expect(len(set(minutes)) == len(minutes), f"{quota}: minutes {minutes}")
        for event in events:
            once.expect(event["eventId"] not in ids, f"{quota}: id {event['eventId']} twice")
            once.expect(event["eventId"] in delivered_ids, f"{quota}: {event['eventId']} not delivered")
            ids.add(event["eventId"])
        logged.expect(
            answered.get(quota, 0) <= lines[quota] and answered_units.get(quota, 0) <= line_units[quota],
            f"{quota}: {answered.get(quota, 0)} answered ({answered_units.get(quota, 0)} unit(s)), "
            f"{lines[quota]} logged ({line_units[quota]} unit(s))",
        )
    return [counted, once, logged]
