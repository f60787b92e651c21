"""Random, seeded faults for chaos runs, injected inside the sandboxes and by the event sources,
through the two hooks the local runtime offers (`RuntimeSettings.sandbox_hook` and
`RuntimeSettings.delivery_faults`; `ChaosConfig.sandbox_hook()` and `StreamDeliveryFaults` here).

Off unless a run asks for them. Each kind has a rate: the probability that a call it applies to
is faulted. Every fault injected is recorded as one JSON line in a ledger file, so a run can say
what it did.

In the sandboxes, the faults work on DynamoDB calls, through botocore hooks below the
handler's code:

| kind | what happens |
|---|---|
| throttle | answered 400 ThrottlingException; nothing lands |
| fail_before | answered 500 InternalServerError; nothing lands |
| land_then_500 | the write is sent and lands, then the answer is replaced by a 500 (ambiguous) |
| lands_answers_late | the write lands; its answer (a 500 or a read timeout) comes `late_answer_seconds` later |
| transaction_conflict | TransactWriteItems answered TransactionCanceledException [TransactionConflict, None] |
| crash_after_write | the function dies right after a write landed (mid-request or mid-batch) |
| trimmed | the redrive's GetShardIterator answered TrimmedDataAccessException |

lands_answers_late leaves time for the consumer, the redrive or the sweeper to act before the SDK
retries: the retry must recognise its own landed write whatever happened since. Both landing
kinds apply only to writes that do land: a write whose condition fails gets its real answer.

In the stream event source:

| kind | what happens |
|---|---|
| duplicate_delivery | a batch that succeeded is delivered again |
| concurrent_delivery | a batch goes to two sandboxes at once, as overlapping consumers would |
| out_of_order_replay | a succeeded batch is also sent to DLQ 1 after the next batch: a late replay |

Decisions come from random.Random seeded with the run's seed, the function and the sandbox
number, so one seed repeats the same decisions for the same sequence of calls. Thread
scheduling can still change which calls those are.
"""

from __future__ import annotations

import json
import os
import random
import threading
import time
from collections.abc import Mapping
from dataclasses import asdict, dataclass, field
from typing import Any

from local.faults import FAULT_FLAG_PREFIX
from local.functions import SandboxHook

SANDBOX_KINDS = (
    "throttle",
    "fail_before",
    "land_then_500",
    "lands_answers_late",
    "transaction_conflict",
    "crash_after_write",
    "trimmed",
)
SOURCE_KINDS = ("duplicate_delivery", "concurrent_delivery", "out_of_order_replay")
ALL_KINDS = SANDBOX_KINDS + SOURCE_KINDS

SINGLE_ITEM_WRITES = frozenset({"PutItem", "UpdateItem", "DeleteItem"})
WRITE_OPERATIONS = SINGLE_ITEM_WRITES | {"TransactWriteItems"}


class SandboxCrash(Exception):
    """The function died right after a write landed (raised by an injected fault)."""


@dataclass(frozen=True)
class ChaosConfig:
    seed: int
    ledger_path: str
    rates: Mapping[str, float] = field(default_factory=dict)
    # A deliberate bug to plant in the sandboxes (chaos/mutations.py), to show a run catches it.
    mutation: str | None = None
    # How long a lands_answers_late answer is held back: the stream is applied within a second here.
    late_answer_seconds: float = 2.0
    # Only single-item writes answer late, always with a 500 (the outside test of docs/admission.md).
    late_single_item_only: bool = False

    def rate(self, kind: str) -> float:
        return float(self.rates.get(kind, 0.0))

    def sandbox_hook(self) -> SandboxHook:
        """For the runtime: each sandbox installs these faults before its handler loads."""
        return SandboxHook(f"{__name__}:install_in_sandbox", self.to_json())

    def delivery_faults(self, shard_id: str) -> StreamDeliveryFaults:
        """For the runtime: what one stream shard's deliveries do wrong."""
        return StreamDeliveryFaults(self, shard_id)

    def to_json(self) -> str:
        return json.dumps(asdict(self))

    @classmethod
    def from_json(cls, text: str) -> ChaosConfig:
        values = json.loads(text)
        unknown = set(values.get("rates", {})) - set(ALL_KINDS)
        if unknown:
            raise ValueError(f"unknown fault kinds {sorted(unknown)}; known: {list(ALL_KINDS)}")
        return cls(**values)


class FaultLedger:
    """The run's record of every fault injected: one line each, appended from any process (small
    appends stay whole)."""

    def __init__(self, path: str, source: str) -> None:
        self._path = path
        self._source = source
        self._lock = threading.Lock()

    def record(self, kind: str, detail: str = "") -> None:
        line = json.dumps({"kind": kind, "source": self._source, "detail": detail}) + "\n"
        with self._lock:
            fd = os.open(self._path, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o644)
            try:
                os.write(fd, line.encode())
            finally:
                os.close(fd)


def read_ledger(path: str) -> list[dict[str, str]]:
    if not os.path.exists(path):
        return []
    with open(path, encoding="utf-8") as ledger:
        return [json.loads(line) for line in ledger if line.strip()]


class Dice:
    """A seeded random source shared by threads."""

    def __init__(self, seed: str) -> None:
        self._random = random.Random(seed)  # noqa: S311 - reproducible faults, not secrets
        self._lock = threading.Lock()

    def roll(self, rate: float) -> bool:
        if rate <= 0:
            return False
        with self._lock:
            return self._random.random() < rate


class StreamDeliveryFaults:
    """The stream source's faults for one shard (local/event_sources.py DeliveryFaults)."""

    def __init__(self, config: ChaosConfig, shard_id: str) -> None:
        self._config = config
        self._dice = Dice(f"{config.seed}/stream/{shard_id}")
        self._ledger = FaultLedger(config.ledger_path, "stream")

    def _roll(self, kind: str, records: int) -> bool:
        if not self._dice.roll(self._config.rate(kind)):
            return False
        self._ledger.record(kind, f"{records} record(s)")
        return True

    def deliver_twice_at_once(self, records: int) -> bool:
        return self._roll("concurrent_delivery", records)

    def deliver_again(self, records: int) -> bool:
        return self._roll("duplicate_delivery", records)

    def replay_late(self, records: int) -> bool:
        return self._roll("out_of_order_replay", records)


# --- inside a sandbox -----------------------------------------------------------------------------


def install_in_sandbox(argument: str, function: str, sandbox: int) -> None:
    """The runtime's sandbox hook (local/functions.py SandboxHook): `argument` is the ChaosConfig."""
    import boto3
    from botocore.awsrequest import AWSResponse
    from botocore.exceptions import ReadTimeoutError
    from botocore.httpsession import URLLib3Session

    from local.faults import ANSWERS, aws_response

    config = ChaosConfig.from_json(argument)
    if config.mutation:
        from chaos import mutations

        mutations.apply(config.mutation)
    if boto3.DEFAULT_SESSION is None:
        boto3.setup_default_session()
    events = boto3.DEFAULT_SESSION.events
    dice = Dice(f"{config.seed}/{function}/{sandbox}")
    ledger = FaultLedger(config.ledger_path, function)
    http = URLLib3Session()

    def remember(event_name: str, context: dict[str, Any], **_: Any) -> None:
        context["chaos_operation"] = event_name.rsplit(".", 1)[-1]

    def answer(request: Any, kind: str) -> AWSResponse:
        return aws_response(request, *ANSWERS[kind])

    def before_send(request: Any, **_: Any) -> AWSResponse | None:
        if any(name.startswith(FAULT_FLAG_PREFIX) and value for name, value in request.context.items()):
            return None  # a fixed fault rule (local/faults.py) answers this call: it always wins
        operation = request.context.get("chaos_operation", "")
        if operation == "GetShardIterator":
            if function == "redrive" and dice.roll(config.rate("trimmed")):
                ledger.record("trimmed", operation)
                return answer(request, "TrimmedDataAccessException")
            return None
        if operation == "TransactWriteItems" and dice.roll(config.rate("transaction_conflict")):
            ledger.record("transaction_conflict", operation)
            return answer(request, "TransactionConflict")
        if dice.roll(config.rate("throttle")):
            ledger.record("throttle", operation)
            return answer(request, "ThrottlingException")
        if dice.roll(config.rate("fail_before")):
            ledger.record("fail_before", operation)
            return answer(request, "InternalServerError")
        if operation in WRITE_OPERATIONS and dice.roll(config.rate("land_then_500")):
            sent = http.send(request)
            if sent.status_code != 200:
                return sent  # it did not land (a failed condition, say): nothing ambiguous to hide
            ledger.record("land_then_500", operation)  # the write landed...
            return answer(request, "InternalServerError")  # ...unseen
        late_operations = SINGLE_ITEM_WRITES if config.late_single_item_only else WRITE_OPERATIONS
        if operation in late_operations and dice.roll(config.rate("lands_answers_late")):
            sent = http.send(request)
            if sent.status_code != 200:
                return sent
            # The write landed, and the rest of the system moves on...
            as_timeout = not config.late_single_item_only and dice.roll(0.5)
            ledger.record("lands_answers_late", f"{operation} {'read timeout' if as_timeout else '500'}")
            time.sleep(config.late_answer_seconds)
            if as_timeout:  # ...then the SDK sees what it sees when a read times out
                raise ReadTimeoutError(endpoint_url=request.url)
            return answer(request, "InternalServerError")
        return None

    def after_call(context: dict[str, Any], http_response: Any, **_: Any) -> None:
        operation = context.get("chaos_operation", "")
        landed = operation in WRITE_OPERATIONS and http_response.status_code == 200
        if landed and dice.roll(config.rate("crash_after_write")):
            ledger.record("crash_after_write", operation)
            raise SandboxCrash(f"injected crash after {operation}")

    for service in ("dynamodb", "dynamodb-streams"):
        events.register(f"provide-client-params.{service}", remember)
        events.register(f"before-send.{service}", before_send)
    events.register("after-call.dynamodb", after_call)
