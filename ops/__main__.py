"""`python -m ops`: operate the hybrid counter, on AWS or on the local runtime.

Where it points, first found: --endpoint-url (or AWS_ENDPOINT_URL); AWS with --aws; a running
`make run`, from the .local/endpoints.json it writes (its emulator, stack name and region:
`python -m ops account acme` needs nothing more; --local-dir or HYBRID_COUNTER_LOCAL_DIR names
the folder); else AWS, with your default credentials and region. The table, the queues and the
sweeper are found from the stack's outputs (--stack-name).

Exit codes: 0 done; 1 error; 2 bad usage; 3 try again later (heal: pending work or busy; audit:
an account was written between every pair of reads; sweep: already running); 4 not found
(account, or a named DLQ 2 message); 5 drift found (audit: counters disagree with the items).
"""

from __future__ import annotations

import argparse
import json
import os
import re
import sys
import time
from collections import Counter
from collections.abc import Callable, Sequence
from datetime import timedelta
from functools import cached_property
from typing import Any

from botocore.exceptions import BotoCoreError, ClientError
from hybrid_counter_client import LocalSystemError, local_directory

from functions.adapters.dynamo_table import DynamoTable
from functions.adapters.event_bus import EventBridgeBus
from functions.adapters.refused_windows import DynamoRefusedWindows, SqsAnnouncementQueue
from functions.core.audit import RECORDS, Recount
from functions.core.errors import StoreUnavailable
from functions.core.healing import HealOutcome
from functions.core.model import DEFAULT_RESOURCE_TYPE, RESOURCE_TYPE_PATTERN, Quota
from functions.core.periods import format_instant
from functions.shared.clock import Clock
from infra.function_settings import API_FUNCTION, HEAL_QUIET_SECONDS
from infra.outputs import DEFAULT_STACK_NAME
from local.endpoints import LOCAL_DIR_ENV, check_answers, read_endpoints
from ops import commands, refusals, usage_events
from ops.stack import (
    EXIT_DRIFT,
    EXIT_ERROR,
    EXIT_NOT_FOUND,
    EXIT_OK,
    EXIT_TRY_LATER,
    Connection,
    FunctionFailed,
    OpsError,
    StackOutputs,
    function_environment,
)

# How often `ops events --follow` reads the log group again.
FOLLOW_POLL_SECONDS = 2.0


def connection_options(defaults: dict[str, Any] | None) -> argparse.ArgumentParser:
    """The options every command takes, before or after its name.

    The top-level parser gets the real defaults. The commands get SUPPRESS, so an option given
    after the command overrides one given before it, and an absent one leaves it alone.
    """

    def default(name: str) -> Any:
        return argparse.SUPPRESS if defaults is None else defaults[name]

    options = argparse.ArgumentParser(add_help=False)
    options.add_argument(
        "--endpoint-url",
        default=default("endpoint_url"),
        help="AWS endpoint: an emulator, or LocalStack (default: AWS_ENDPOINT_URL, else the running `make run`'s "
        "emulator, else AWS)",
    )
    options.add_argument(
        "--aws",
        action="store_true",
        default=default("aws"),
        help="AWS itself, even while a `make run` is running here",
    )
    options.add_argument(
        "--local-dir",
        default=default("local_dir"),
        help=f"the .local folder of the `make run` to operate (default: {LOCAL_DIR_ENV}, else the first .local "
        "holding endpoints.json here or in a parent folder)",
    )
    options.add_argument(
        "--region", default=default("region"), help="AWS region (default: the `make run`'s, else your configuration)"
    )
    options.add_argument(
        "--stack-name",
        default=default("stack_name"),
        help=f"stack to read the outputs of (default: the `make run`'s, else {DEFAULT_STACK_NAME})",
    )
    options.add_argument("--json", action="store_true", default=default("json"), help="print JSON")
    return options


def build_parser() -> argparse.ArgumentParser:
    connection = connection_options(None)
    parser = argparse.ArgumentParser(
        prog="python -m ops",
        description=__doc__,
        formatter_class=argparse.RawDescriptionHelpFormatter,
        parents=[
            connection_options(
                {
                    "endpoint_url": os.environ.get("AWS_ENDPOINT_URL") or None,
                    "aws": False,
                    "local_dir": None,
                    "region": None,
                    "stack_name": None,
                    "json": False,
                }
            )
        ],
    )
    commands_parser = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")

    account = commands_parser.add_parser(
        "account",
        parents=[connection],
        help="an account's limits, counters, live resources, pending work and drift, one row per type",
        description="Every type of the account in one table, the default first (as GET /accounts/{id} lists "
        "them): its limit, best-effort counter, admitted slots, eventual counter, live resources, pending "
        "counting work, drift and ETag; then the details of each type with pending work or drift. Reads the "
        "account's own partition (a Query, never a scan).",
    )
    account.add_argument("account_id")
    add_type_option(
        account,
        "show this type alone, with its details (default: every type of the account)",
        default=None,
    )
    account.set_defaults(run=run_account)

    audit = commands_parser.add_parser(
        "audit",
        parents=[connection],
        help="recount accounts from their items and compare with every counter (read-only)",
        description="Count each account's resource items (a consistent Query of its partition, never a scan) "
        "and compare with eventual, best effort and admitted, allowing for the writes in flight. An account "
        "is judged only on two identical consecutive reads; one written between every pair is inconclusive. "
        "One JSON line per account with --json. Exit 0: no drift; 5: drift found; 3: some inconclusive.",
    )
    target = audit.add_mutually_exclusive_group(required=True)
    target.add_argument("account_id", nargs="?", metavar="ACCOUNT", help="one account")
    target.add_argument("--all", action="store_true", help="every account (the activity index, never a scan)")
    target.add_argument("--account", dest="account_option", metavar="ACCOUNT", help="deprecated: ops audit ACCOUNT")
    add_types_options(audit, "audit")
    audit.add_argument(
        "--repair",
        action="store_true",
        help="correct what drifted, safely while writes continue: the eventual counter by the drift measured, "
        f"then best effort and held slots by the sweeper's heal (quiet {HEAL_QUIET_SECONDS} s)",
    )
    audit.set_defaults(run=run_audit)

    heal = commands_parser.add_parser(
        "heal",
        aliases=["reconcile"],
        parents=[connection],
        help="heal an account's best-effort counter and held slots to the exact count now",
        description="Run the sweeper's heal on one account now (docs/healing.md). Exit 0: healed or already "
        "exact; 3: counting work pending or an API write came in between, try again later; 4: no such account.",
    )
    heal.add_argument("account_id")
    add_types_options(heal, "heal")
    heal.add_argument(
        "--quiet-seconds",
        type=int,
        default=HEAL_QUIET_SECONDS,
        help="lower held slots only if the account had no API write for this long, and settle leases taken "
        f"longer ago than this as dead (default {HEAL_QUIET_SECONDS}, as deployed)",
    )
    heal.add_argument(
        "--force",
        action="store_true",
        help=f"allow --quiet-seconds below the API function's timeout ({API_FUNCTION.timeout_seconds} s): "
        "safe only while no API call for the account can be in flight (docs/healing.md)",
    )
    heal.set_defaults(run=run_heal)

    dlq2 = commands_parser.add_parser("dlq2", help="inspect and replay DLQ 2 (stream ranges the redrive gave up on)")
    dlq2_commands = dlq2.add_subparsers(dest="dlq2_command", required=True, metavar="ACTION")
    listing = dlq2_commands.add_parser(
        "list",
        parents=[connection],
        help="show DLQ 2's messages without consuming them",
        description="Show DLQ 2's messages and the stream range each names. Nothing is deleted: each message is "
        f"hidden for at most {commands.LIST_VISIBILITY_SECONDS} s while listed, then made visible again. Each "
        "listing adds one to the receive counts shown.",
    )
    listing.add_argument("--max", type=int, default=100, help="list at most this many messages (default 100)")
    listing.set_defaults(run=run_dlq2_list)
    replay = dlq2_commands.add_parser(
        "replay",
        parents=[connection],
        help="move messages back to DLQ 1, where the redrive function applies them",
        description="Replay DLQ 2 through the same redrive path: each body is sent unchanged to DLQ 1, which the "
        "redrive function consumes, and deleted from DLQ 2 only once that send succeeded. Idempotent by design: "
        "a stream range applied twice changes nothing, because the counting rules only apply what the table "
        "still shows as pending, so replaying a message again (or one already redriven) is harmless. Bodies "
        "that are not stream on-failure records are skipped, unless --include-unparseable.",
    )
    selection = replay.add_mutually_exclusive_group(required=True)
    selection.add_argument("--all", action="store_true", help="every message in DLQ 2")
    selection.add_argument("message_ids", nargs="*", default=[], metavar="MESSAGE_ID", help="these messages only")
    replay.add_argument(
        "--include-unparseable",
        action="store_true",
        help="move unparseable bodies too (the redrive will fail them back into DLQ 2)",
    )
    replay.set_defaults(run=run_dlq2_replay)

    events = commands_parser.add_parser(
        "events",
        parents=[connection],
        help="tail the usage events on the stack's bus, or replay those the publisher gave up on",
        description="Without an action: print the usage events the stack's bus carried (docs/events.md), oldest "
        "first, from the log group a rule of the stack sends them to; --follow keeps printing new ones.",
    )
    events.add_argument("--since-minutes", type=int, default=60, help="from this long ago (default 60)")
    events.add_argument("--follow", action="store_true", help="keep printing events as they come (Ctrl-C stops)")
    events.set_defaults(run=run_events_tail)
    events_commands = events.add_subparsers(dest="events_command", metavar="ACTION")
    events_replay = events_commands.add_parser(
        "replay",
        parents=[connection],
        help="put again the events of the batches in the events' dead-letter queue",
        description="For each message of the usage events' dead-letter queue (a stream batch the publisher gave "
        "up on), read the batch's records back from the stream (or, once the stream trimmed them, the outbox "
        "items written in the batch's time) and put their events on the bus; the message is deleted once every "
        "event is on the bus. Harmless to repeat: every copy of an event carries its id.",
    )
    events_replay.set_defaults(run=run_events_replay)
    events_refusals = events_commands.add_parser(
        "refusals", help="the Limit Refused events' dead-letter queue (refusals not counted, minutes not announced)"
    )
    refusals_commands = events_refusals.add_subparsers(dest="refusals_command", required=True, metavar="ACTION")
    refusals_replay = refusals_commands.add_parser(
        "replay",
        parents=[connection],
        help="count the refusal lines and announce the minutes of the refusals' dead-letter queue",
        description="For each message of the Limit Refused events' dead-letter queue (output RefusalsDlqUrl): "
        "CloudWatch Logs' payload of refusal lines the aggregator failed is counted as the aggregator counts it "
        "(a minute it opens has its announcement scheduled on the windows queue, read from the deployed "
        "aggregator's environment), and a minute the emitter failed is announced as the emitter announces it. "
        "Each message is deleted once handled; one of neither shape is left in the queue and reported (exit 1). "
        "Harmless to repeat: a batch counted before adds nothing, and a minute is announced once.",
    )
    refusals_replay.add_argument(
        "--grace-seconds",
        type=int,
        help="announce a minute this long after its end (default: the deployed aggregator's grace)",
    )
    refusals_replay.set_defaults(run=run_refusals_replay)

    sweep = commands_parser.add_parser(
        "sweep",
        parents=[connection],
        help="run the sweeper now: apply old pending work, heal quiet accounts",
        description="Run the sweeper now. --invoke (the default on AWS) invokes the deployed function and prints "
        "its result. --in-process runs its code here with the deployed function's settings (read from its "
        "environment) against the stack's table; it is the default when an endpoint URL is set, because the "
        "emulator behind `make run` (moto) cannot run the deployed function's code.",
    )
    mode = sweep.add_mutually_exclusive_group()
    mode.add_argument(
        "--invoke", dest="mode", action="store_const", const="invoke", help="invoke the deployed function"
    )
    mode.add_argument(
        "--in-process", dest="mode", action="store_const", const="in-process", help="run the sweep in this process"
    )
    sweep.set_defaults(run=run_sweep, mode=None)

    registry = commands_parser.add_parser(
        "registry-backfill",
        parents=[connection],
        help="list accounts created before the account registry: give each its registry key (once)",
        description="Give each account created before the accounts index (GET /accounts) its registry key: its "
        "plan's name, or '-' for none. One Scan of the table, a page at a time, writing only the accounts that "
        'lack the key, each conditionally: a rerun writes nothing (docs/plans.md, "The account registry").',
    )
    registry.set_defaults(run=run_registry_backfill)

    accounts_parser = commands_parser.add_parser("accounts", help='accounts (docs/plans.md, "Lifecycle")')
    accounts_commands = accounts_parser.add_subparsers(
        dest="accounts_command", required=True, metavar="ACCOUNTS_COMMAND"
    )
    delete = accounts_commands.add_parser(
        "delete",
        parents=[connection],
        help="delete an account: refuse its creates now, announce Account Deleted, let the sweeper erase it",
        description="What DELETE /accounts/{id} does, from this process: records the deletion with its Account "
        "Deleted event (once), and deletes the account's admission shards, so every create is refused from now on; "
        'the sweeper erases the rest (docs/plans.md, "Lifecycle"). Exit 0: accepted (again, if it was already); '
        "4: no such account.",
    )
    delete.add_argument("account_id")
    delete.set_defaults(run=run_accounts_delete)

    plans_parser = commands_parser.add_parser("plans", help="plans (docs/plans.md)")
    plans_commands = plans_parser.add_subparsers(dest="plans_command", required=True, metavar="PLANS_COMMAND")
    status = plans_commands.add_parser(
        "status",
        parents=[connection],
        help="a plan's version and how many of its accounts have it (its rollout's progress)",
        description="The plan's current version and its accounts, counted from the account registry: how many "
        "have the version. Exit 0 when every account has it, 3 while its rollout runs, 1 if there is no such plan.",
    )
    status.add_argument("plan", type=resource_type_name, help="the plan's name")
    status.set_defaults(run=run_plans_status)
    return parser


def resource_type_name(value: str) -> str:
    if not re.fullmatch(RESOURCE_TYPE_PATTERN, value):
        raise argparse.ArgumentTypeError(f"{value!r} is not a type name ({RESOURCE_TYPE_PATTERN})")
    return value


def add_type_option(
    parser: argparse._ActionsContainer, help_text: str, default: str | None = DEFAULT_RESOURCE_TYPE
) -> None:
    parser.add_argument(
        "--type",
        dest="resource_type",
        type=resource_type_name,
        default=default,
        metavar="TYPE",
        help=help_text,
    )


def add_types_options(parser: argparse.ArgumentParser, verb: str) -> None:
    """`--type TYPE` or `--all-types`: which of the account's quotas to work on."""
    which = parser.add_mutually_exclusive_group()
    add_type_option(which, f"the type to {verb} (default: the default type)")
    which.add_argument("--all-types", action="store_true", help=f"{verb} every type of the account, the default first")


# -- commands ----------------------------------------------------------------------------------


class Context:
    """The parsed arguments, the connection, the clock, and the stack's outputs (read on first use)."""

    def __init__(self, args: argparse.Namespace, clock: Clock) -> None:
        self.args = args
        self.connection = Connection(args.endpoint_url, args.region)
        self.clock = clock

    @cached_property
    def table(self) -> DynamoTable:
        """The stack's table, through one DynamoDB client."""
        return DynamoTable(self.connection.client("dynamodb"), self.outputs.table_name)

    @cached_property
    def outputs(self) -> StackOutputs:
        return StackOutputs.resolve(self.connection, self.args.stack_name)


def run_account(context: Context) -> int:
    account_id, narrowed_to = context.args.account_id, context.args.resource_type
    # Every type of the account, the default first, as the API's GET of the account lists them;
    # or the one `--type` names.
    quotas = (
        [Quota(account_id, narrowed_to)]
        if narrowed_to is not None
        else commands.account_quotas(context.table, account_id)
    )
    # A periodic type's row is its current period's.
    views = [commands.recount(context.table, quota, context.clock.now()) for quota in quotas]
    if context.args.json:
        # One type's view; without --type, the default type's with `types` beside it once the
        # account has another type, as the API's GET of the account answers.
        first = views[0].to_json()
        if narrowed_to is None and len(views) > 1:
            first["types"] = [view.to_json() | {"resource_type": view.quota.resource_type} for view in views]
        return emit_json(first)
    print(format_account(account_id, views, detailed=narrowed_to is not None))
    return EXIT_OK


def account_quotas(context: Context, account_id: str) -> list[Quota]:
    """The quotas `--type` or `--all-types` name of one account (the default type's if neither)."""
    if context.args.all_types:
        return commands.account_quotas(context.table, account_id)
    return [Quota(account_id, context.args.resource_type)]


def run_audit(context: Context) -> int:
    account_id = context.args.account_id
    if context.args.account_option:  # kept for operators' scripts, as `account` and `heal` take it
        account_id = context.args.account_option
        print(f"note: --account is deprecated: use `python -m ops audit {account_id}`", file=sys.stderr)
    if not account_id and (context.args.all_types or context.args.resource_type != DEFAULT_RESOURCE_TYPE):
        raise OpsError("--type and --all-types name one account's types: `--all` audits every type already")
    now = context.clock.now()
    # A periodic quota's periods are quotas of their own: an account's recent ones are audited with
    # it; `--all` finds every one in the activity index, as it finds every quota.
    quotas = (
        commands.with_periods(context.table, account_quotas(context, account_id), now)
        if account_id
        else commands.all_quotas(context.table)
    )
    verdicts: Counter[str] = Counter()
    progress = len(quotas) > 1 and sys.stderr.isatty()
    for done, quota in enumerate(quotas, start=1):
        finding = commands.audit_account(context.table, quota, now=now)
        verdicts[finding.verdict] += 1
        repair = None
        judged_on_records = finding.recount is None or finding.recount.basis == RECORDS
        if context.args.repair and finding.verdict == "drift" and not judged_on_records:
            print(f"  {quota}: not repaired: its records have expired, so nothing says what its counters should be")
        elif context.args.repair and finding.verdict == "drift":
            quiet = timedelta(seconds=HEAL_QUIET_SECONDS)
            repair = commands.repair_account(context.table, finding, quiet, context.clock.now())
            verdicts["repaired"] += 1
        if context.args.json:
            print(json.dumps(finding.to_json() | ({"repair": repair.to_json()} if repair else {})), flush=True)
        elif finding.verdict != "exact":
            print(f"{quota}: {finding.verdict}" + "".join(f"\n  {problem}" for problem in finding.problems))
            if repair is not None:
                heal = repair.heal.value if repair.heal else "not needed"
                print(f"  repaired: eventual {repair.eventual_fixed_by:+d}, heal {heal}")
        if progress:
            print(f"\raudited {done}/{len(quotas)}", end="", file=sys.stderr, flush=True)
    if progress:
        print(file=sys.stderr)
    if not context.args.json:
        # A verdict per quota (an account's type): so many quotas, of so many accounts.
        accounts = len({quota.account_id for quota in quotas})
        print(f"audited {_many(len(quotas), 'quota')} of {_many(accounts, 'account')}: {_counts(dict(verdicts))}")
    if verdicts["drift"] > verdicts["repaired"]:
        return EXIT_DRIFT
    return EXIT_TRY_LATER if verdicts["inconclusive"] else EXIT_OK


def run_heal(context: Context) -> int:
    quiet = context.args.quiet_seconds
    if quiet < 0:
        raise OpsError("--quiet-seconds must not be negative")
    if quiet < API_FUNCTION.timeout_seconds and not context.args.force:
        raise OpsError(
            f"--quiet-seconds {quiet} is below the API function's timeout ({API_FUNCTION.timeout_seconds} s): a "
            "create still in flight could lose the slot it holds and the account could exceed its limit "
            "(docs/healing.md); pass --force if no API call for the account can be in flight"
        )
    exit_code = EXIT_OK
    for quota in account_quotas(context, context.args.account_id):
        report = commands.heal(context.table, quota, timedelta(seconds=quiet), context.clock.now())
        if context.args.json:
            emit_json(report.to_json())
        elif report.outcome is HealOutcome.NOT_FOUND:
            print(f"error: account {report.quota} not found in table {context.outputs.table_name}", file=sys.stderr)
        else:
            print(format_heal(report))
        exit_code = max(exit_code, report.exit_code)  # not found (4) over try later (3) over done (0)
    return exit_code


def run_dlq2_list(context: Context) -> int:
    if context.args.max < 1:
        raise OpsError("--max must be at least 1")
    listing = commands.list_dlq2(
        context.connection.client("sqs"),
        context.outputs.dlq2_url,
        context.args.max,
        streams=context.connection.client("dynamodbstreams"),
    )
    if context.args.json:
        return emit_json(listing.to_json())
    print(format_listing(listing))
    return EXIT_OK


def run_dlq2_replay(context: Context) -> int:
    args = context.args
    report = commands.replay_dlq2(
        context.connection.client("sqs"),
        context.outputs.dlq2_url,
        context.outputs.dlq1_url,
        None if args.all else args.message_ids,
        include_unparseable=args.include_unparseable,
    )
    if args.json:
        emit_json(report.to_json())
    else:
        print(format_replay(report))
    return report.exit_code


def run_events_tail(context: Context) -> int:
    logs = context.connection.client("logs")
    log_group = context.outputs.events_log_group
    start = context.clock.epoch_ms() - context.args.since_minutes * 60_000
    seen: set[str] = set()
    while True:
        for timestamp, event in usage_events.tail(logs, log_group, start):
            start = max(start, timestamp)
            if event.get("id") in seen:  # the window starts at the last one printed
                continue
            seen.add(str(event.get("id")))
            print(json.dumps(event) if context.args.json else usage_events.describe(event), flush=True)
        if not context.args.follow:
            return EXIT_OK
        time.sleep(FOLLOW_POLL_SECONDS)


def run_events_replay(context: Context) -> int:
    outputs = context.outputs
    bus = EventBridgeBus(context.connection.client("events"), outputs.event_bus_name)
    report = usage_events.replay(
        context.connection.client("sqs"),
        outputs.events_dlq_url,
        context.connection.client("dynamodbstreams"),
        context.table,
        bus,
    )
    if context.args.json:
        emit_json(report.to_json())
    else:
        for message_id, count in report.replayed.items():
            source = " (from the table)" if message_id in report.from_table else ""
            print(f"{message_id}: {count} event(s) put again{source}")
        for message_id, why in report.failed.items():
            print(f"{message_id}: left in the queue: {why}")
        print(f"replayed {len(report.replayed)} batch(es), {len(report.failed)} left")
    return report.exit_code


def run_refusals_replay(context: Context) -> int:
    grace_seconds = context.args.grace_seconds
    if grace_seconds is not None and grace_seconds < 0:
        raise OpsError("--grace-seconds must not be negative")
    outputs = context.outputs
    lambda_client = context.connection.client("lambda")
    aggregator = refusals.aggregator_settings(function_environment(lambda_client, outputs.refusal_aggregator_function))
    sqs = context.connection.client("sqs")
    report = refusals.replay(
        sqs,
        outputs.refusals_dlq_url,
        DynamoRefusedWindows(context.table),
        SqsAnnouncementQueue(sqs, aggregator.windows_queue_url),
        context.clock,
        aggregator.grace if grace_seconds is None else timedelta(seconds=grace_seconds),
    )
    if context.args.json:
        emit_json(report.to_json())
    else:
        print(format_refusals_replay(report))
    return report.exit_code


def run_sweep(context: Context) -> int:
    mode = context.args.mode or ("in-process" if context.connection.endpoint_url else "invoke")
    function_name = context.outputs.sweeper_function
    if mode == "invoke":
        try:
            result = commands.sweep_invoke(context.connection.client("lambda", commands.INVOKE_CONFIG), function_name)
        except FunctionFailed as error:
            if context.connection.endpoint_url:  # moto, behind `make run`, stores functions but cannot run them
                raise FunctionFailed(f"{error}\n(if the emulator cannot run functions, use --in-process)") from error
            raise
    else:
        environment = function_environment(context.connection.client("lambda"), function_name)
        result = commands.sweep_in_process(context.connection, context.outputs.table_name, environment, context.clock)
    if context.args.json:
        return emit_json(result.to_json())
    print(format_sweep(result))
    return EXIT_OK


def run_registry_backfill(context: Context) -> int:
    from ops.registry import backfill_registry

    written = backfill_registry(context.table)
    if context.args.json:
        return emit_json({"written": written})
    print(f"{_many(written, 'account')} given a registry key")
    return EXIT_OK


def run_accounts_delete(context: Context) -> int:
    from functions.adapters.offboarding_store import DynamoOffboardingStore
    from functions.core import offboarding
    from functions.core.errors import AccountNotFound

    store = DynamoOffboardingStore(context.table)
    account_id = context.args.account_id
    try:
        deletion = offboarding.delete_account(store, account_id, context.clock.epoch_ms(), "ops", context.clock.now())
    except AccountNotFound:
        print(f"error: account {account_id} not found in table {context.outputs.table_name}", file=sys.stderr)
        return EXIT_NOT_FOUND
    types = [place.resource_type for place in deletion.quotas]
    if context.args.json:
        emit_json({"accountId": account_id, "requestedMs": deletion.requested_ms, "resourceTypes": types})
    else:
        print(f"account {account_id} deleted ({_many(len(types), 'type')}): the sweeper erases it")
    return EXIT_OK


def run_plans_status(context: Context) -> int:
    from functions.adapters.api_store import DynamoApiStore
    from functions.core import rollout

    store = DynamoApiStore(context.table)
    plan = store.read_plan(context.args.plan)
    if plan is None:
        raise OpsError(f"no plan {context.args.plan!r}")
    progress = rollout.progress(store, plan)
    done = progress.updated == progress.accounts
    if context.args.json:
        emit_json(
            {"plan": plan.name, "version": progress.version, "accounts": progress.accounts, "updated": progress.updated}
        )
    else:
        state = "done" if done else "rolling out"
        print(
            f"{plan.name} version {progress.version}: {progress.updated} of {_many(progress.accounts, 'account')}"
            f" have it ({state})"
        )
    return EXIT_OK if done else EXIT_TRY_LATER


# -- output ------------------------------------------------------------------------------------


def emit_json(value: Any) -> int:
    print(json.dumps(value, indent=2))
    return EXIT_OK


def _signed(value: int) -> str:
    return f"{value:+d}" if value else "0"


# `ops account`'s table: a column's heading and its value for a type's view.
ACCOUNT_COLUMNS: tuple[tuple[str, Callable[[Recount], object]], ...] = (
    ("type", lambda view: view.quota.resource_type),
    ("limit", lambda view: view.limit),
    ("best_effort", lambda view: view.best_effort),
    ("admitted", lambda view: view.admitted),
    ("eventual", lambda view: view.eventual),
    ("live", lambda view: view.live),
    ("pending", lambda view: view.pending),
    ("best_effort-live", lambda view: _signed(view.best_effort_drift)),
    ("admitted-live", lambda view: _signed(view.admitted_drift)),
    ("etag", lambda view: f'"{view.limit_version}"'),
)


def needs_a_look(view: Recount) -> bool:
    """Pending counting work, drift, a negative best effort, or creates in flight: what its details tell."""
    return bool(
        view.pending
        or view.best_effort_drift
        or view.admitted_drift
        or view.best_effort_net < 0
        or view.creates_in_flight
    )


def format_account(account_id: str, views: Sequence[Recount], detailed: bool = False) -> str:
    """A table of the types' views, one row each, then the details of each type that needs a look
    (of every type shown, when `detailed`)."""
    rows = [[heading for heading, _ in ACCOUNT_COLUMNS]]
    rows += [[str(value(view)) for _, value in ACCOUNT_COLUMNS] for view in views]
    widths = [max(len(row[column]) for row in rows) for column in range(len(ACCOUNT_COLUMNS))]
    lines = [f"account {account_id}"]
    for row in rows:
        # The type's name to the left, the numbers to the right.
        cells = [row[0].ljust(widths[0])] + [cell.rjust(width) for cell, width in zip(row[1:], widths[1:], strict=True)]
        lines.append("  " + "  ".join(cells).rstrip())
    for view in views:
        if view.period is not None and view.window is not None:
            lines.append(
                f"  {view.quota.resource_type}: per {view.period.kind.value}"
                + (f" from {format_instant(view.period.anchor)}" if view.period.anchor else "")
                + f"; its counts are the current period's, {format_instant(view.window.start)} to "
                f"{format_instant(view.window.end)} (`python -m ops audit` audits its recent periods)"
            )
    for view in views:
        if detailed or needs_a_look(view):
            lines += ["", *format_type_details(view)]
    if not detailed and len(views) > 1:
        lines += ["", f"one type alone, with its details: python -m ops account {account_id} --type TYPE"]
    return "\n".join(lines)


def format_type_details(view: Recount) -> list[str]:
    lines = [
        f"{view.quota}",
        f"  best_effort    {view.best_effort}  (signed net {view.best_effort_net})",
        f"  live units     {view.live}  (resource items {view.resource_items}, counted units {view.counted})",
        f"  pending work   uncounted {view.uncounted}, soft-deleted {view.soft_deleted}, "
        f"deletes in flight {view.deletes_in_flight}",
        f"  in flight      creates {view.creates_in_flight} (leases held; a heal settles dead ones), "
        f"tombstones {view.tombstones}",
        f"  drift          best_effort - live = {_signed(view.best_effort_drift)}, "
        f"admitted - live = {_signed(view.admitted_drift)}",
        f'  limit version  {view.limit_version}  (the API\'s ETag "{view.limit_version}")',
        f"  account item   writes {view.version}, heal epoch {view.heal_epoch}, "
        f"last write {view.last_write_at or '-'}, last healed or checked {view.healed_at or '-'}",
    ]
    if view.pending:
        lines.append("  counting work is pending: the stream, the redrive or the sweeper will apply it")
    elif view.best_effort_drift or view.admitted_drift:
        heal = f"python -m ops heal {view.quota.account_id}" + (
            "" if view.quota.is_default else f" --type {view.quota.resource_type}"
        )
        lines.append(
            f"  drift with no pending work: `{heal}` heals it (held slots only "
            f"once the account has had no write for {HEAL_QUIET_SECONDS} s); the sweeper does it too"
        )
    return lines


_HEAL_MESSAGES = {
    HealOutcome.HEALED: "healed",
    HealOutcome.EXACT: "exact: nothing to change",
    HealOutcome.PENDING_WORK: "pending work: a resource is uncounted, soft-deleted or being deleted; try again later",
    HealOutcome.BUSY: "busy: the account changed while the heal looked at it; try again later",
}


def format_heal(report: commands.HealReport) -> str:
    lines = [f"heal {report.quota}: {_HEAL_MESSAGES.get(report.outcome, report.outcome.value)}"]
    before, after = report.before, report.after
    if before is not None and after is not None:
        lines += [
            f"  best_effort    {before.best_effort_net} -> {after.best_effort_net}",
            f"  admitted       {before.admitted} -> {after.admitted}",
            f"  eventual       {report.eventual}",
        ]
    if report.slots_still_held:
        lines.append(
            f"  {report.slots_still_held} slot(s) still held: the account was written less than "
            f"{report.quiet_seconds} s ago; heal again once it is quiet"
        )
    return "\n".join(lines)


def format_listing(listing: commands.DlqListing) -> str:
    lines = [
        f"DLQ 2 {listing.queue_url}",
        f"  about {listing.approximate_visible} visible and {listing.approximate_in_flight} in flight; "
        f"listed {len(listing.messages)}",
    ]
    for message in listing.messages:
        lines.append(f"{message.message_id}  receives {message.receive_count}  sent {message.sent_at or '-'}")
        batch = message.batch
        if batch is None:
            body = message.body if len(message.body) <= 200 else message.body[:200] + "..."
            lines.append(f"    unparseable ({message.parse_error}): {body!r}")
        else:
            lines.append(
                f"    shard {batch.shard_id}  sequence {batch.start_sequence_number}..{batch.end_sequence_number}"
                f"  batch size {batch.batch_size}"
            )
            if message.quotas is not None:
                lines.append(f"    records of {', '.join(map(str, message.quotas)) or 'no account'}")
            elif message.records_error:
                lines.append(f"    records not read: {message.records_error}")
    return "\n".join(lines)


def format_replay(report: commands.ReplayReport) -> str:
    lines = [f"moved {len(report.moved)} message(s) from DLQ 2 to DLQ 1 (the redrive function consumes them)"]
    lines += [f"  {old} -> {new}" for old, new in report.moved.items()]
    if report.skipped:
        lines.append(f"skipped {len(report.skipped)} (left in DLQ 2; --include-unparseable moves them anyway):")
        lines += [f"  {message_id}: {why}" for message_id, why in report.skipped.items()]
    if report.failed:
        lines.append(f"failed {len(report.failed)}:")
        lines += [f"  {message_id}: {why}" for message_id, why in report.failed.items()]
    if report.not_found:
        lines.append("not found in DLQ 2 (or held by another reader right now):")
        lines += [f"  {message_id}" for message_id in report.not_found]
    return "\n".join(lines)


def format_refusals_replay(report: refusals.RefusalsReplay) -> str:
    lines = []
    for message_id, counted in report.payloads.items():
        lines.append(
            f"{message_id}: refusal lines: counted {counted.counted}, late {counted.late}, repeated "
            f"{counted.repeated}; {counted.scheduled} announcement(s) scheduled"
        )
    for message_id, outcome in report.windows.items():
        window = f"window {outcome.window.quota} {outcome.window.key_name}"
        if outcome.announced is None:
            lines.append(f"{message_id}: {window}: nothing to announce (announced already, or never opened)")
        else:
            lines.append(f"{message_id}: {window}: announced, {outcome.announced.refused} refused")
    lines += [f"{message_id}: left in the queue: {why}" for message_id, why in report.left.items()]
    lines.append(f"replayed {len(report.payloads) + len(report.windows)} message(s), {len(report.left)} left")
    return "\n".join(lines)


def format_sweep(result: commands.SweepResult) -> str:
    summary = result.summary
    settings = result.settings
    header = f"sweep ({result.mode}"
    if settings:
        header += (
            f"; pending older than {settings['pending_older_than_seconds']} s, quiet {settings['quiet_seconds']} s,"
            f" lookback {settings['lookback_seconds']} s"
        )
    lines = [header + ")"]
    if {"pending", "heals"} <= summary.keys():
        lines.append(f"  pending work   {_counts(summary['pending'])}; failed {summary.get('pending_failed', 0)}")
        lines.append(f"  heals          {_counts(summary['heals'])}")
        if "busy_accounts" in summary:
            busy, settled = summary["busy_accounts"], summary.get("dead_leases_settled", 0)
            lines.append(f"  busy accounts  {busy}; dead leases settled {settled}")
        if "grants_ended" in summary:
            lines.append(f"  grants ended   {summary['grants_ended']}")
        if "accounts_erased" in summary:
            lines.append(f"  accounts erased {summary['accounts_erased']}")
    else:
        lines.append(f"  {json.dumps(summary)}")
    return "\n".join(lines)


def _many(count: int, noun: str) -> str:
    return f"{count} {noun}{'' if count == 1 else 's'}"


def _counts(values: dict[str, int]) -> str:
    return ", ".join(f"{name} {count}" for name, count in sorted(values.items())) or "none"


# -- entry point -------------------------------------------------------------------------------


def point(args: argparse.Namespace) -> None:
    """Where the command points (the module's docstring says the order): a running `make run`'s
    emulator, stack and region unless an endpoint or --aws is given; a `.local/endpoints.json` whose
    emulator no longer answers is an error, never silently used."""
    if not (args.endpoint_url or args.aws):
        try:
            local_dir = local_directory(args.local_dir)
        except LocalSystemError as error:
            if args.local_dir or os.environ.get(LOCAL_DIR_ENV):
                raise OpsError(str(error)) from None
            local_dir = None  # no `make run` here: AWS
        if local_dir is not None:
            try:
                endpoints = read_endpoints(local_dir)
                check_answers(local_dir, endpoints.emulator_url)
            except LocalSystemError as error:
                raise OpsError(f"{error} (or pass --aws for AWS)") from None
            args.endpoint_url = endpoints.emulator_url
            args.region = args.region or endpoints.region
            args.stack_name = args.stack_name or endpoints.stack_name
    args.stack_name = args.stack_name or DEFAULT_STACK_NAME


def main(argv: Sequence[str] | None = None, clock: Clock | None = None) -> int:
    """`clock` None: the system clock (tests pass theirs)."""
    args = build_parser().parse_args(argv)
    run: Callable[[Context], int] = args.run
    try:
        point(args)
        return run(Context(args, clock or Clock()))
    except OpsError as error:
        print(f"error: {error}", file=sys.stderr)
        return error.exit_code
    except StoreUnavailable as error:
        print(f"error: the table did not answer: {error}", file=sys.stderr)
        return EXIT_ERROR
    except (ClientError, BotoCoreError) as error:
        print(f"error: {error}", file=sys.stderr)
        return EXIT_ERROR
    except KeyboardInterrupt:
        return 130
    except BrokenPipeError:  # `python -m ops ... | head`
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        return EXIT_OK


if __name__ == "__main__":
    sys.exit(main())
