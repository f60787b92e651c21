"""The operator commands, one function each, over resolved names; they return data, never print.

Each reuses the functions' own code (adapters, healing, redrive parsing, the sweep), so what an
operator runs is what the system runs.
"""

from __future__ import annotations

import contextlib
import json
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from datetime import UTC, datetime, timedelta
from typing import Any

from botocore.config import Config
from botocore.exceptions import BotoCoreError, ClientError

from functions.adapters import keys
from functions.adapters.api_store import DynamoApiStore
from functions.adapters.audit_reads import DynamoAuditReads
from functions.adapters.counters import correct_counter, read_counter
from functions.adapters.dynamo_table import DynamoTable
from functions.adapters.failure_messages import InvalidFailureMessage, parse_failure_message
from functions.adapters.healing_store import DynamoHealingStore
from functions.adapters.table_layout import PARTITION_KEY
from functions.core import history
from functions.core.audit import RECORDS, AuditFinding, Recount, audit, quota_fields
from functions.core.errors import AccountNotFound, QuotaNotPeriodic
from functions.core.healing import AccountState, HealOutcome, HealPlan, heal_account
from functions.core.model import Quota
from functions.core.redrive import StreamBatchInfo
from functions.shared.clock import Clock
from infra.function_settings import SWEEPER_FUNCTION
from ops.stack import (
    EXIT_ERROR,
    EXIT_NOT_FOUND,
    EXIT_OK,
    EXIT_TRY_LATER,
    AccountNotInTable,
    Connection,
    FunctionFailed,
    OpsError,
    TryLater,
)

# -- account -----------------------------------------------------------------------------------


def recount(table: DynamoTable, quota: Quota, now: datetime | None = None) -> Recount:
    """The account's counters and the truth about its resources, from its own partition only
    (functions/adapters/audit_reads.py). The two reads are not one snapshot: on a busy account,
    the numbers can disagree by the writes made in between. Given `now`, a periodic quota's are
    its period's at `now` (its current one; before its first create, 0 at the quota's limit),
    with the period and its window."""
    reads = DynamoAuditReads(table, None if now is None else lambda: now)
    found = reads.recount(quota)
    if found is None:
        raise AccountNotInTable(f"account {quota} not found in table {table.name}")
    if found.period is None or now is None:
        return found
    window = found.period.window_at(now)
    current = reads.recount(quota.in_period(window.id))
    if current is None:  # nobody created in it yet: no item of it
        return replace(found, quota=quota.in_period(window.id), basis=RECORDS, window=window)
    return replace(current, period=found.period)


# -- audit -------------------------------------------------------------------------------------


def audit_account(table: DynamoTable, quota: Quota, attempts: int = 3, now: datetime | None = None) -> AuditFinding:
    """Recount one account from its items and compare (read-only): functions/core/audit.py. Given
    `now`, a period whose records may have expired is judged on its counters alone."""
    reads = DynamoAuditReads(table, None if now is None else lambda: now)
    finding = audit(lambda: reads.recount(quota), quota, attempts)
    if finding is None:
        raise AccountNotInTable(f"account {quota} not found in table {table.name}")
    return finding


def with_periods(table: DynamoTable, quotas: Sequence[Quota], now: datetime) -> list[Quota]:
    """`quotas`, each periodic one followed by its periods that have items among its last 13 (the
    periods a history answers, newest first): each is a quota of its own to audit."""
    store = DynamoApiStore(table)
    found: list[Quota] = []
    for quota in quotas:
        found.append(quota)
        with contextlib.suppress(QuotaNotPeriodic, AccountNotFound):
            read = history.period_history(store, quota, history.MAX_HISTORY_PERIODS, now)
            found += [quota.in_period(total.window.id) for total in read.totals if total.opened]
    return found


def all_quotas(table: DynamoTable) -> list[Quota]:
    return DynamoAuditReads(table).all_quotas()


def account_types(table: DynamoTable, account_id: str) -> list[str]:
    """The types an account has limits of: the default first, then the others by name."""
    found = DynamoAuditReads(table).account_types(account_id)
    if found is None:
        raise AccountNotInTable(f"account {account_id} not found in table {table.name}")
    return found


def account_quotas(table: DynamoTable, account_id: str) -> list[Quota]:
    """Every quota of an account: one per type, the default first."""
    return [Quota(account_id, resource_type) for resource_type in account_types(table, account_id)]


@dataclass(frozen=True)
class Repair:
    quota: Quota
    eventual_fixed_by: int  # added to the eventual counter (0: it was right, or not repaired)
    heal: HealOutcome | None  # best effort and held slots, by the sweeper's heal; None: no drift

    def to_json(self) -> dict[str, Any]:
        return {
            **quota_fields(self.quota),
            "eventual_fixed_by": self.eventual_fixed_by,
            "heal": self.heal.value if self.heal else None,
        }


def repair_account(table: DynamoTable, finding: AuditFinding, quiet: timedelta, now: datetime) -> Repair:
    """Correct what an audit judged wrong, safely while writes continue.

    `eventual - counted` is the drift: every correct counting transaction moves both together, so
    it stays what the audit measured however many run meanwhile, and adding `-drift` to counter
    shard 0 fixes it. The add is conditional on the shard's count as read just before, so an SDK
    retry of a landed add is refused rather than applied twice. Best effort and held slots are then
    the sweeper's heal's (docs/healing.md): it needs no counting work pending, and lowers held
    slots only on an account quiet for `quiet`."""
    counts = finding.recount
    if finding.verdict != "drift" or counts is None or counts.basis != RECORDS:
        return Repair(finding.quota, 0, None)  # only a recount against the records says what is right
    fixed_by = counts.counted - counts.eventual
    if fixed_by:
        read = read_counter(table, finding.quota)
        if not correct_counter(table, finding.quota, fixed_by, read):
            raise TryLater(f"account {finding.quota}: its counter moved while it was repaired; audit again")
    # Any drift wants the heal: best effort and held slots are its, and a fixed eventual moves both.
    return Repair(finding.quota, fixed_by, heal(table, finding.quota, quiet, now).outcome)


# -- heal --------------------------------------------------------------------------------------


@dataclass(frozen=True)
class HealReport:
    quota: Quota
    outcome: HealOutcome
    quiet_seconds: int
    before: AccountState | None
    after: AccountState | None
    eventual: int | None
    plan: HealPlan | None

    @property
    def exit_code(self) -> int:
        return heal_exit_code(self.outcome)

    @property
    def slots_still_held(self) -> int:
        """Slots above the exact count that this heal left alone (the account was not quiet)."""
        if self.after is None or self.eventual is None or self.outcome not in (HealOutcome.HEALED, HealOutcome.EXACT):
            return 0
        return max(0, self.after.admitted - self.eventual)

    def to_json(self) -> dict[str, Any]:
        def state(value: AccountState | None) -> dict[str, Any] | None:
            if value is None:
                return None
            return {
                "best_effort": value.best_effort_net,
                "admitted": value.admitted,
                "version": value.version,
                "heal_epoch": value.heal_epoch,
                "last_write_at": value.last_write_at,
            }

        return {
            **quota_fields(self.quota),
            "outcome": self.outcome.value,
            "quiet_seconds": self.quiet_seconds,
            "eventual": self.eventual,
            "before": state(self.before),
            "after": state(self.after),
            "slots_still_held": self.slots_still_held,
        }


def heal_exit_code(outcome: HealOutcome) -> int:
    if outcome in (HealOutcome.HEALED, HealOutcome.EXACT):
        return EXIT_OK
    if outcome in (HealOutcome.PENDING_WORK, HealOutcome.BUSY):
        return EXIT_TRY_LATER
    return EXIT_NOT_FOUND


def heal(table: DynamoTable, quota: Quota, quiet: timedelta, now: datetime) -> HealReport:
    """functions.core.healing.heal_account with the real store, as the sweeper runs it."""
    store = DynamoHealingStore(table)
    result = heal_account(store, quota, now, quiet)
    after = None
    if result.outcome is not HealOutcome.NOT_FOUND:
        read = store.read_account_state(quota)
        after = read[0] if read else None
    return HealReport(
        quota=quota,
        outcome=result.outcome,
        quiet_seconds=int(quiet.total_seconds()),
        before=result.before,
        after=after,
        eventual=result.eventual,
        plan=result.plan,
    )


# -- DLQ 2 -------------------------------------------------------------------------------------

# `list` hides what it receives for this long at most, and makes it visible again when it is done.
LIST_VISIBILITY_SECONDS = 2
# `replay` hides messages while it moves them (one send and one delete each), then releases the rest.
REPLAY_VISIBILITY_SECONDS = 30
_RECEIVE_WAIT_SECONDS = 1  # a short long-poll: an empty answer then means the queue is empty
SQS_BATCH = 10


@dataclass(frozen=True)
class DlqMessage:
    message_id: str
    receive_count: int  # includes this tool's own receive
    sent_at: str
    body: str
    batch: StreamBatchInfo | None  # None: the body is not an on-failure record
    parse_error: str | None = None
    # The quotas (account and type) of the range's records, as the stream still holds them; None:
    # not read (`records_error` says why, when a read was tried).
    quotas: tuple[Quota, ...] | None = None
    records_error: str | None = None

    def to_json(self) -> dict[str, Any]:
        batch = self.batch
        return {
            "message_id": self.message_id,
            "receive_count": self.receive_count,
            "sent_at": self.sent_at,
            "batch": None
            if batch is None
            else {
                "stream_arn": batch.stream_arn,
                "shard_id": batch.shard_id,
                "start_sequence_number": batch.start_sequence_number,
                "end_sequence_number": batch.end_sequence_number,
                "batch_size": batch.batch_size,
            },
            "unparseable": self.parse_error,
            "body": self.body if batch is None else None,
            "quotas": None if self.quotas is None else [quota_fields(quota) for quota in self.quotas],
            "records_error": self.records_error,
        }


@dataclass(frozen=True)
class DlqListing:
    queue_url: str
    approximate_visible: int
    approximate_in_flight: int
    messages: list[DlqMessage]

    def to_json(self) -> dict[str, Any]:
        return {
            "queue_url": self.queue_url,
            "approximate_visible": self.approximate_visible,
            "approximate_in_flight": self.approximate_in_flight,
            "messages": [message.to_json() for message in self.messages],
        }


def describe_message(message: Mapping[str, Any]) -> DlqMessage:
    attributes = message.get("Attributes", {})
    body = str(message.get("Body", ""))
    try:
        batch: StreamBatchInfo | None = parse_failure_message(body)
        problem = None
    except InvalidFailureMessage as error:
        batch, problem = None, str(error)
    sent = attributes.get("SentTimestamp")
    return DlqMessage(
        message_id=message["MessageId"],
        receive_count=int(attributes.get("ApproximateReceiveCount", 0)),
        sent_at=_iso_from_millis(sent) if sent else "",
        body=body,
        batch=batch,
        parse_error=problem,
    )


def range_quotas(streams: Any, batch: StreamBatchInfo) -> tuple[Quota, ...]:
    """The quotas (account and type) whose items the records of a stream range are, sorted, read
    from the stream (a trimmed range raises ClientError TrimmedDataAccessException)."""
    iterator = streams.get_shard_iterator(
        StreamArn=batch.stream_arn,
        ShardId=batch.shard_id,
        ShardIteratorType="AT_SEQUENCE_NUMBER",
        SequenceNumber=batch.start_sequence_number,
    )["ShardIterator"]
    end = int(batch.end_sequence_number)
    found: set[Quota] = set()
    while iterator:
        page = streams.get_records(ShardIterator=iterator, Limit=1000)
        records = page.get("Records", [])
        in_range = [r for r in records if int(r["dynamodb"]["SequenceNumber"]) <= end]
        found.update(
            quota for r in in_range if (quota := keys.quota_of(r["dynamodb"]["Keys"][PARTITION_KEY]["S"])) is not None
        )
        if not records or len(in_range) < len(records):
            break
        iterator = page.get("NextShardIterator")
    return tuple(sorted(found))


def _with_quotas(streams: Any, message: DlqMessage) -> DlqMessage:
    if message.batch is None:
        return message
    try:
        return replace(message, quotas=range_quotas(streams, message.batch))
    except (ClientError, BotoCoreError) as error:
        return replace(message, records_error=str(error))


def list_dlq2(sqs: Any, dlq2_url: str, max_messages: int = 100, streams: Any = None) -> DlqListing:
    """Up to `max_messages` messages of DLQ 2, without consuming them: each is received with a
    visibility timeout of LIST_VISIBILITY_SECONDS, never deleted, and made visible again at once
    when the listing ends. Receiving raises each message's ApproximateReceiveCount by one. With a
    DynamoDB Streams client, each range's records are read for the quotas they are of."""
    counts = sqs.get_queue_attributes(
        QueueUrl=dlq2_url, AttributeNames=["ApproximateNumberOfMessages", "ApproximateNumberOfMessagesNotVisible"]
    )["Attributes"]
    seen: dict[str, DlqMessage] = {}
    handles: dict[str, str] = {}
    try:
        while len(seen) < max_messages:
            wanted = min(SQS_BATCH, max_messages - len(seen))
            received = receive_messages(sqs, dlq2_url, wanted, LIST_VISIBILITY_SECONDS)
            new = [message for message in received if message["MessageId"] not in seen]
            handles.update({message["MessageId"]: message["ReceiptHandle"] for message in received})
            if not new:  # empty, or only messages seen already (they reappeared): the end
                break
            seen.update({message["MessageId"]: describe_message(message) for message in new})
    finally:
        release_messages(sqs, dlq2_url, handles)
    return DlqListing(
        queue_url=dlq2_url,
        approximate_visible=int(counts.get("ApproximateNumberOfMessages", 0)),
        approximate_in_flight=int(counts.get("ApproximateNumberOfMessagesNotVisible", 0)),
        messages=[message if streams is None else _with_quotas(streams, message) for message in seen.values()],
    )


@dataclass
class ReplayReport:
    moved: dict[str, str] = field(default_factory=dict)  # DLQ 2 message id -> its new DLQ 1 message id
    skipped: dict[str, str] = field(default_factory=dict)  # message id -> why (unparseable)
    failed: dict[str, str] = field(default_factory=dict)  # message id -> error; left in DLQ 2
    not_found: list[str] = field(default_factory=list)  # named, but not received from DLQ 2
    by_id: bool = False  # messages were named: skipping one is a failure to do what was asked

    @property
    def exit_code(self) -> int:
        if self.failed or (self.by_id and self.skipped):
            return EXIT_ERROR
        if self.not_found:
            return EXIT_NOT_FOUND
        return EXIT_OK

    def to_json(self) -> dict[str, Any]:
        return {"moved": self.moved, "skipped": self.skipped, "failed": self.failed, "not_found": self.not_found}


def replay_dlq2(
    sqs: Any,
    dlq2_url: str,
    dlq1_url: str,
    message_ids: Sequence[str] | None = None,
    include_unparseable: bool = False,
) -> ReplayReport:
    """Move messages from DLQ 2 back to DLQ 1, where the redrive function consumes them: the same
    redrive path the stream's failures take. `message_ids=None` moves every message.

    Each body is sent to DLQ 1 unchanged, and deleted from DLQ 2 only after that send succeeded.
    A message can therefore reach DLQ 1 twice (a retried run, SQS's at-least-once delivery), which
    is harmless: the counting rules make a stream range applied again change nothing. Bodies that
    are not on-failure records are skipped (the redrive would only fail them back into DLQ 2),
    unless `include_unparseable`.
    """
    wanted = set(message_ids) if message_ids is not None else None
    report = ReplayReport(by_id=wanted is not None)
    held: dict[str, str] = {}  # received and not moved: made visible again at the end
    try:
        while wanted is None or wanted - report.moved.keys() - report.skipped.keys() - report.failed.keys():
            received = receive_messages(sqs, dlq2_url, SQS_BATCH, REPLAY_VISIBILITY_SECONDS)
            progress = False
            for message in received:
                message_id, handle = message["MessageId"], message["ReceiptHandle"]
                if message_id in report.moved:  # delivered again after we moved it: its body is in DLQ 1
                    delete_message_quietly(sqs, dlq2_url, handle)
                    continue
                progress |= message_id not in held
                held[message_id] = handle
                if wanted is not None and message_id not in wanted:
                    continue
                problem = describe_message(message).parse_error
                if problem is not None and not include_unparseable:
                    report.skipped[message_id] = f"unparseable: {problem}"
                    continue
                try:
                    sent = sqs.send_message(
                        QueueUrl=dlq1_url, MessageBody=message["Body"], **_message_attributes(message)
                    )
                except (ClientError, BotoCoreError) as error:
                    report.failed[message_id] = f"send to DLQ 1 failed, left in DLQ 2: {error}"
                    continue
                report.moved[message_id] = sent["MessageId"]
                del held[message_id]
                try:
                    sqs.delete_message(QueueUrl=dlq2_url, ReceiptHandle=handle)
                except (ClientError, BotoCoreError) as error:
                    report.failed[message_id] = (
                        f"sent to DLQ 1 but not deleted from DLQ 2 (harmless if replayed): {error}"
                    )
            if not progress:
                break
    finally:
        release_messages(sqs, dlq2_url, held)
    if wanted is not None:
        done = report.moved.keys() | report.skipped.keys() | report.failed.keys()
        report.not_found = sorted(wanted - done)
    return report


def handle_each_message(sqs: Any, queue_url: str, handle: Callable[[str, str], bool]) -> None:
    """Hand every message of a queue to `handle(message id, body)` once, each hidden from other
    readers meanwhile; delete those it handled (True), and make the others visible again at the
    end, left for another run."""
    held: dict[str, str] = {}
    try:
        while True:
            received = receive_messages(sqs, queue_url, SQS_BATCH, REPLAY_VISIBILITY_SECONDS)
            new = [message for message in received if message["MessageId"] not in held]
            if not new:  # empty, or only the messages left for another run: done
                break
            for message in new:
                message_id, receipt = message["MessageId"], message["ReceiptHandle"]
                held[message_id] = receipt
                if handle(message_id, message["Body"]):
                    delete_message_quietly(sqs, queue_url, receipt)
                    del held[message_id]
    finally:
        release_messages(sqs, queue_url, held)


def receive_messages(sqs: Any, queue_url: str, count: int, visibility: int) -> list[dict[str, Any]]:
    response = sqs.receive_message(
        QueueUrl=queue_url,
        MaxNumberOfMessages=count,
        VisibilityTimeout=visibility,
        WaitTimeSeconds=_RECEIVE_WAIT_SECONDS,
        AttributeNames=["All"],
        MessageAttributeNames=["All"],
    )
    return list(response.get("Messages", []))


def _message_attributes(message: Mapping[str, Any]) -> dict[str, Any]:
    attributes = message.get("MessageAttributes")
    if not attributes:
        return {}
    copied = {
        name: {key: value[key] for key in ("DataType", "StringValue", "BinaryValue") if key in value}
        for name, value in attributes.items()
    }
    return {"MessageAttributes": copied}


def delete_message_quietly(sqs: Any, queue_url: str, handle: str) -> None:
    with contextlib.suppress(ClientError, BotoCoreError):  # it stays in DLQ 2: replaying it again is harmless
        sqs.delete_message(QueueUrl=queue_url, ReceiptHandle=handle)


def release_messages(sqs: Any, queue_url: str, handles: Mapping[str, str]) -> None:
    """Make received messages visible again now (best effort: they reappear on their own anyway)."""
    entries = [
        {"Id": str(index), "ReceiptHandle": handle, "VisibilityTimeout": 0}
        for index, handle in enumerate(handles.values())
    ]
    for start in range(0, len(entries), SQS_BATCH):
        with contextlib.suppress(ClientError, BotoCoreError):
            sqs.change_message_visibility_batch(QueueUrl=queue_url, Entries=entries[start : start + SQS_BATCH])


def _iso_from_millis(value: str) -> str:
    moment = datetime.fromtimestamp(int(value) / 1000, tz=UTC)
    return moment.isoformat(timespec="seconds").replace("+00:00", "Z")


# -- sweep -------------------------------------------------------------------------------------

# The sweeper's own settings, read from the deployed function's environment.
SWEEP_SETTINGS = ("tombstone_retention", "pending_older_than", "quiet", "lookback")


@dataclass(frozen=True)
class SweepResult:
    mode: str  # "invoke" or "in-process"
    summary: dict[str, Any]  # functions.sweeper.handler.summary(report), as the function returns it
    settings: dict[str, int] = field(default_factory=dict)  # seconds, in-process only

    def to_json(self) -> dict[str, Any]:
        return {"mode": self.mode, "summary": self.summary, "settings": self.settings}


# For the Lambda client that invokes the sweeper: it may run for its whole timeout, and one attempt
# only (a retried invocation would just queue a second sweep behind the first).
INVOKE_CONFIG = Config(read_timeout=SWEEPER_FUNCTION.timeout_seconds + 30, retries={"total_max_attempts": 1})


def sweep_invoke(lambda_client: Any, function_name: str) -> SweepResult:
    """Invoke the deployed sweeper and wait for its result (build the client with INVOKE_CONFIG)."""
    try:
        response = lambda_client.invoke(
            FunctionName=function_name,
            InvocationType="RequestResponse",
            Payload=json.dumps({"source": "ops"}).encode(),
        )
    except ClientError as error:
        if error.response.get("Error", {}).get("Code") == "TooManyRequestsException":
            raise TryLater("the sweeper is running already (it runs one at a time): try again later") from error
        raise
    payload = response["Payload"].read()
    try:
        result = json.loads(payload) if payload else {}
    except ValueError:
        result = {"raw": payload.decode(errors="replace")}
    if not isinstance(result, dict):
        result = {"result": result}
    if response.get("FunctionError"):
        message = result.get("errorMessage") or result.get("raw") or json.dumps(result)
        raise FunctionFailed(f"the sweeper {function_name} failed ({response['FunctionError']}): {message}")
    return SweepResult("invoke", result)


def sweep_in_process(
    connection: Connection, table: str, function_environment: Mapping[str, str], clock: Clock
) -> SweepResult:
    """functions.sweeper.handler.run_sweep() in this process, with the deployed function's settings.

    TABLE_NAME comes from the stack's outputs, the thresholds from the function's environment
    (a threshold the function does not set is unset here too, so both use the same default).
    """
    from functions.shared.config import ConfigurationError, FunctionEnvironment, Settings
    from functions.shared.wiring import Wiring
    from functions.sweeper.handler import erase_deleted_accounts, run_sweep, summary

    names = [FunctionEnvironment.variable(setting) for setting in SWEEP_SETTINGS]
    environment = {name: function_environment[name] for name in names if name in function_environment}
    environment[FunctionEnvironment.variable("table_name")] = table
    try:
        settings = Settings.from_env(environment)
    except ConfigurationError as error:
        raise OpsError(f"the sweeper's deployed settings are invalid: {error}") from error
    wiring = Wiring(settings, connection.session, connection.endpoint_url, clock)
    report = run_sweep(wiring)
    erased = erase_deleted_accounts(wiring)
    return SweepResult(
        "in-process",
        {**summary(report), "accounts_erased": erased},
        {
            "pending_older_than_seconds": int(settings.sweep.pending_older_than.total_seconds()),
            "quiet_seconds": int(settings.sweep.quiet.total_seconds()),
            "lookback_seconds": int(settings.sweep.lookback.total_seconds()),
        },
    )
