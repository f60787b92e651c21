"""What one create + delete iteration costs on DynamoDB, per operation, by item: calls, WCU and RCU.

    .venv/bin/python -m benchmarks.api_path_cost [--iterations 20]

Runs the real flows (functions.core with the real adapters) against the embedded emulator, one
account, and attributes every call's capacity as DynamoDB bills it: a write is 1 WCU per KB of the
larger of the item before and after, a transactional write twice that, a consistent read 1 RCU per
4 KB; an index write per index whose key attribute appears, disappears or changes (a change is two
index writes). Item sizes follow DynamoDB's rules (name lengths plus value sizes). A first cut of
the capacity meter that issue "Capacity made visible" asks for; it prints figures, it asserts none.
"""

from __future__ import annotations

import argparse
import math
import os
from collections import defaultdict
from collections.abc import Mapping
from datetime import UTC, datetime
from decimal import Decimal
from typing import Any

import boto3

from functions.core import schema

INDEX_KEYS = {
    schema.PENDING_INDEX_NAME: (schema.PENDING_BUCKET_ATTRIBUTE, schema.PENDING_SINCE_ATTRIBUTE),
    schema.ACTIVITY_INDEX_NAME: (schema.ACTIVITY_BUCKET_ATTRIBUTE, schema.LAST_WRITE_ATTRIBUTE),
}
WRITES = {"PutItem", "UpdateItem", "DeleteItem", "TransactWriteItems"}


def attribute_size(value: Mapping[str, Any]) -> int:
    ((kind, inner),) = value.items()
    if kind == "S":
        return len(inner.encode())
    if kind == "N":
        digits = len(str(Decimal(inner)).lstrip("-").replace(".", "").lstrip("0")) or 1
        return math.ceil(digits / 2) + 1
    if kind in ("BOOL", "NULL"):
        return 1
    if kind == "M":
        return 3 + sum(len(k.encode()) + attribute_size(v) + 1 for k, v in inner.items())
    if kind == "L":
        return 3 + sum(attribute_size(v) + 1 for v in inner)
    return len(str(inner))


def item_size(item: Mapping[str, Any] | None) -> int:
    return sum(len(name.encode()) + attribute_size(value) for name, value in (item or {}).items())


def item_name(key: Mapping[str, Any]) -> str:
    sort_key = key[schema.SORT_KEY]["S"]
    return "resource" if sort_key.startswith(schema.RESOURCE_PREFIX) else sort_key.lower()


class Meter:
    """Hooks a client: reads each written item before and after with a second, unhooked client."""

    def __init__(self, client: Any, reader: Any, table: str) -> None:
        self.reader, self.table = reader, table
        self.operation = "setup"
        self.calls: dict[str, dict[str, int]] = defaultdict(lambda: defaultdict(int))
        self.wcu: dict[str, dict[str, float]] = defaultdict(lambda: defaultdict(float))
        self.rcu: dict[str, dict[str, float]] = defaultdict(lambda: defaultdict(float))
        self._before: dict[int, list[tuple[dict[str, Any], dict[str, Any] | None, int]]] = {}
        client.meta.events.register("provide-client-params.dynamodb.*", self._remember)
        client.meta.events.register("after-call.dynamodb.*", self._count)

    def _read(self, key: Mapping[str, Any]) -> dict[str, Any] | None:
        return self.reader.get_item(TableName=self.table, Key=key, ConsistentRead=True).get("Item")  # type: ignore[no-any-return]

    def _remember(self, params: dict[str, Any], context: dict[str, Any], model: Any, **_: Any) -> None:
        if model.name not in WRITES:
            return
        targets = (
            [(params, 1)]
            if model.name != "TransactWriteItems"
            else [(next(iter(action.values())), 2) for action in params["TransactItems"]]
        )
        before = []
        for target, factor in targets:
            key = target.get("Key") or {name: target["Item"][name] for name in (schema.PARTITION_KEY, schema.SORT_KEY)}
            before.append((key, self._read(key), factor))
        context["meter_before"] = before

    def _count(self, context: dict[str, Any], model: Any, parsed: Mapping[str, Any], **_: Any) -> None:
        self.calls[self.operation][model.name] += 1
        if model.name == "GetItem":
            self.rcu[self.operation]["resource (read)"] += 1
        elif model.name == "BatchGetItem":
            self.rcu[self.operation]["account + counter (read)"] += 2
        elif model.name == "Query":
            self.rcu[self.operation]["query"] += max(1, math.ceil(parsed.get("ScannedCount", 1) / 4))
        failed = bool(parsed.get("Error"))
        for key, old, factor in context.get("meter_before", []):
            new = old if failed else self._read(key)
            name = item_name(key)
            self.wcu[self.operation][name] += factor * max(1, math.ceil(max(item_size(old), item_size(new)) / 1024))
            for index, (hash_key, range_key) in INDEX_KEYS.items():
                was = {k: (old or {}).get(k) for k in (hash_key, range_key)}
                now = {k: (new or {}).get(k) for k in (hash_key, range_key)}
                had, has = None not in was.values(), None not in now.values()
                if was != now and (had or has):
                    self.wcu[self.operation][f"index {index}"] += 2 if had and has else 1


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--iterations", type=int, default=20)
    args = parser.parse_args()

    from local.emulator import EmulatorProcess
    from local.runtime import LOCAL_CREDENTIALS
    from tests.support.tables import create_table

    os.environ.update(LOCAL_CREDENTIALS, AWS_DEFAULT_REGION="us-east-1")
    with EmulatorProcess() as emulator:
        os.environ["AWS_ENDPOINT_URL"] = emulator.url
        os.environ[schema.ENV_TABLE_NAME] = table = "cost"
        dynamodb = boto3.client("dynamodb")
        streams = boto3.client("dynamodbstreams")
        stream_arn = create_table(dynamodb, table)
        meter = Meter(dynamodb, boto3.client("dynamodb"), table)
        run(meter, dynamodb, streams, stream_arn, table, args.iterations)
    report(meter, args.iterations)


def run(meter: Meter, dynamodb: Any, streams: Any, stream_arn: str, table: str, iterations: int) -> None:
    from functions.adapters.dynamodb import DynamoApiStore, DynamoCountingStore
    from functions.core import accounts
    from functions.core.counting import process_stream_records
    from functions.core.model import NewResource
    from tests.support.stream import StreamTap

    def now() -> str:
        return datetime.now(UTC).isoformat(timespec="milliseconds").replace("+00:00", "Z")

    api, counting = DynamoApiStore(dynamodb, table), DynamoCountingStore(dynamodb, table)
    tap = StreamTap(streams, stream_arn)
    accounts.put_account(api, "hot", 1_000_000, now)
    tap.drain()
    for _ in range(iterations):
        meter.operation = "create"
        created = accounts.create_resource(api, "hot", NewResource("vm", {"size": 2}), None, now)
        meter.operation = "consumer: count create"
        process_stream_records(counting, tap.drain())
        meter.operation = "delete"
        accounts.delete_resource(api, "hot", created.resource.resource_id, now)
        meter.operation = "consumer: count delete"
        process_stream_records(counting, tap.drain())


def report(meter: Meter, iterations: int) -> None:
    total_wcu: dict[str, float] = defaultdict(float)  # setup (the account) is not an iteration
    print(f"per create+delete iteration, averaged over {iterations} (one account)")
    for operation in meter.calls:
        if operation == "setup":
            continue
        calls = ", ".join(f"{name} {count / iterations:g}" for name, count in sorted(meter.calls[operation].items()))
        wcu = meter.wcu[operation]
        print(f"\n{operation}\n  calls  {calls}")
        for item, units in sorted(wcu.items()):
            print(f"  WCU    {item:<24} {units / iterations:6.2f}")
            total_wcu[item] += units / iterations
        for item, units in sorted(meter.rcu[operation].items()):
            print(f"  RCU    {item:<24} {units / iterations:6.2f}")
    print("\nwhole iteration")
    for item, units in sorted(total_wcu.items(), key=lambda pair: -pair[1]):
        print(f"  WCU    {item:<24} {units:6.2f}")
    print(f"  WCU    {'all':<24} {sum(total_wcu.values()):6.2f}")
    # Each iteration writes a new resource item; the account and counter items take every iteration.
    single = {i: u for i, u in total_wcu.items() if i in ("account", "counter")}
    hottest, units = max(single.items(), key=lambda pair: pair[1])
    print(f"  hottest item: {hottest}, {units:.2f} WCU: one account tops out near {1000 / units:.0f} iterations/s")
    activity = total_wcu.get(f"index {schema.ACTIVITY_INDEX_NAME}", 0.0)
    if activity:
        print(f"  the account's activity index key: {activity:.2f} WCU: near {1000 / activity:.0f} iterations/s")


if __name__ == "__main__":
    main()
