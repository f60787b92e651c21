"""`python -m chaos` (what `make chaos` runs): the system under concurrent clients and injected faults.

Prints a table and writes the same as JSON. Exits 1 on any invariant violation.
"""

from __future__ import annotations

import argparse
import logging
import os
import sys

from chaos.faults import ALL_KINDS
from chaos.mutations import MUTATIONS
from chaos.run import DEFAULT_RATES, ChaosSettings, Report, run
from local.deploy import context_entry


def mutation_names(value: str) -> str:
    """`--break`'s value: known mutation names, comma-joined."""
    unknown = [name for name in value.split(",") if name not in MUTATIONS]
    if unknown:
        raise argparse.ArgumentTypeError(f"unknown mutation(s) {unknown}; known: {sorted(MUTATIONS)}")
    return value


def parse_args(argv: list[str] | None) -> tuple[ChaosSettings, str]:
    parser = argparse.ArgumentParser(prog="python -m chaos", description=__doc__.splitlines()[0])
    parser.add_argument("--seed", type=int, default=7)
    parser.add_argument(
        "--operations",
        type=int,
        default=600,
        help="client operations (creates and deletes, and resizes with --amounts)",
    )
    parser.add_argument("--clients", type=int, default=8, help="concurrent HTTP clients")
    parser.add_argument("--accounts", type=int, default=4, help="ordinary accounts (limit 40)")
    parser.add_argument("--hot-accounts", type=int, default=2, help="accounts hammered at their limit of 5")
    parser.add_argument(
        "--rate",
        action="append",
        default=[],
        metavar="KIND=P",
        help=f"fault rate per call, 0..1; kinds: {', '.join(ALL_KINDS)}",
    )
    parser.add_argument("--scale-rates", type=float, default=1.0, help="multiply every default rate")
    parser.add_argument("--no-faults", action="store_true", help="no faults at all (and no fatal account)")
    parser.add_argument(
        "--ambiguous-writes",
        type=float,
        metavar="P",
        help="the only fault: a share P of single-item writes land and answer 500 two seconds later; "
        "callers must see none of it (docs/admission.md)",
    )
    parser.add_argument(
        "--break",
        dest="mutation",
        type=mutation_names,
        metavar="NAME[,NAME]",
        help=f"plant a known bug (or several, comma-joined): {', '.join(sorted(MUTATIONS))}",
    )
    parser.add_argument("--report", default="chaos-report.json", help="where to write the JSON report")
    parser.add_argument("--quiescence-timeout", type=float, default=180.0)
    parser.add_argument(
        "--partition-limits",
        metavar="FACTOR",
        help="the emulator enforces DynamoDB's partition limits times FACTOR (1/100): hot accounts throttle and "
        "grow admission shards",
    )
    parser.add_argument(
        "--partition-burst-seconds",
        type=float,
        default=0.0,
        help="unused capacity an item keeps for bursts, in seconds of its scaled rate (default 0)",
    )
    parser.add_argument(
        "--audit-repair",
        action="store_true",
        help="run `ops audit --repair` over every account beside the clients: it must report no drift but what "
        "faults inject, and every check must still hold",
    )
    parser.add_argument(
        "--types",
        type=int,
        default=1,
        help="resource types per account, the default one included: the clients race across an account's "
        "types and every check holds per (account, type)",
    )
    parser.add_argument(
        "--plans",
        action="store_true",
        help="every account's named types take their limits from plans (at least 3 types unless --types says "
        "more): an admin changes the plans, moves accounts between them, gives expiring grants, returns "
        "overrides and deletes one more account while the clients work, and once quiet every account must be "
        "at its plan's current limits and the deleted one erased once due (the runtime's clock moved past it)",
    )
    parser.add_argument(
        "--plan-changes",
        type=int,
        default=8,
        help="with --plans: the plans' admin's steps while the clients work (a plan changed, an account moved, a "
        "grant given, an override returned, in turn)",
    )
    parser.add_argument(
        "--limit-changes",
        type=int,
        default=6,
        help="limit changes an admin makes while the clients work (lowered to the usage or below, raised, set "
        "back): each must be one Limit Changed event and the crossings it makes decided once",
    )
    parser.add_argument(
        "--amounts",
        action="store_true",
        help="creates take random amounts (1..8 units, the limits 4 times larger) and the clients also resize live "
        "resources (1..8), racing the deletes and each other: every check holds in units",
    )
    parser.add_argument(
        "--periods",
        action="store_true",
        help="each account also holds a periodic type (a day, limit 12; 6 on a hot account) and the local runtime's "
        "clock crosses --boundaries midnights while the clients create (1..4 units), refund and retry with their "
        "keys: every check holds per period (no Limit Refused checks)",
    )
    parser.add_argument("--boundaries", type=int, default=3, help="midnights the clock crosses with --periods")
    parser.add_argument(
        "--no-refusal-events",
        action="store_true",
        help="do not check the Limit Refused events (the check waits up to a minute for the last minute's)",
    )
    parser.add_argument(
        "-c",
        "--context",
        action="append",
        type=context_entry,
        default=[],
        metavar="KEY=VALUE",
        help="CDK context for the stack under test, e.g. streamParallelizationFactor=2",
    )
    args = parser.parse_args(argv)
    rates = {kind: rate * args.scale_rates for kind, rate in DEFAULT_RATES.items()}
    for item in args.rate:
        kind, _, value = item.partition("=")
        if kind not in ALL_KINDS:
            parser.error(f"unknown fault kind {kind!r}")
        rates[kind] = float(value)
    if args.no_faults or args.ambiguous_writes is not None:
        rates = dict.fromkeys(rates, 0.0)
    if args.ambiguous_writes is not None:
        rates["lands_answers_late"] = args.ambiguous_writes
    settings = ChaosSettings(
        seed=args.seed,
        operations=args.operations,
        clients=args.clients,
        accounts=args.accounts,
        hot_accounts=args.hot_accounts,
        rates=rates,
        mutation=args.mutation,
        quiescence_timeout=args.quiescence_timeout,
        fatal=args.ambiguous_writes is None,
        late_single_item_only=args.ambiguous_writes is not None,
        partition_limits=args.partition_limits,
        partition_burst_seconds=args.partition_burst_seconds,
        context=dict(args.context),
        audit_repair=args.audit_repair,
        types=max(args.types, 3) if args.plans else args.types,
        plans=args.plans,
        plan_changes=args.plan_changes,
        limit_changes=args.limit_changes,
        refusal_events=not args.no_refusal_events,
        amounts=args.amounts,
        periods=args.periods,
        boundaries=args.boundaries,
    )
    return settings, args.report


def render(report: Report) -> str:
    lines = [
        f"chaos run: seed {report.settings['seed']}, {report.settings['operations']} operations, "
        f"{report.settings['clients']} clients, {report.settings['types']} type(s) per account"
        + (", random amounts and resizes" if report.settings.get("amounts") else "")
        + (
            f", periodic quotas over {report.settings['boundaries']} midnights"
            if report.settings.get("periods")
            else ""
        )
        + (", plans" if report.settings.get("plans") else "")
        + (f", broken: {report.settings['mutation']}" if report.settings["mutation"] else "")
    ]
    lines.append("\noperations (client view)")
    lines += [f"  {name:<28} {count:>7}" for name, count in report.operations.items()]
    lines.append(f"  {'client retries':<28} {report.client_retries:>7}")
    lines += [f"  {'creates acknowledged, ' + kind:<28} {count:>7}" for kind, count in report.creates_per_type.items()]
    lines.append(f"\nlimit changes made while the clients worked: {len(report.limit_changes)}")
    lines += [f"  {change}" for change in report.limit_changes]
    if report.plan_changes:
        lines.append(f"\nplan changes made while the clients worked: {len(report.plan_changes)}")
        lines += [f"  {change}" for change in report.plan_changes]
    lines.append("\nfaults injected")
    lines += [f"  {kind:<28} {count:>7}" for kind, count in report.faults.items()] or ["  none"]
    lines.append("\nLambda and queues")
    lines += [f"  {name:<34} {count:>7}" for name, count in report.lambda_traffic.items()]
    lines.append("\ninvariant checks")
    for check in report.checks:
        verdict = "ok" if not check.violations else f"{len(check.violations)} VIOLATION(S)"
        lines.append(f"  {check.name:<88} {check.checked:>7} checked  {verdict}")
        lines += [f"      {violation}" for violation in check.violations[:5]]
    if report.refusals:
        lines.append("refused creates: " + ", ".join(f"{k} {v}" for k, v in report.refusals.items()))
    if report.periods:
        lines.append(
            f"midnights crossed under load: {report.periods['midnights crossed while the clients worked']}, "
            f"settled periods: {report.periods['settled periods']}, keyed retries answered in a later period: "
            f"{report.periods['keyed retries answered in a later period']}"
        )
        lines += [f"  clock: {move}" for move in report.periods["clock"]]
        lines += [
            f"  period {period_id}: {figures['records']} records, {figures['live units']} live units, "
            f"eventual {figures['eventual']}"
            for period_id, figures in report.periods["per period"].items()
        ]
    lines.append(f"\nmax limit overshoot observed: {report.max_limit_overshoot} (bound: {report.overshoot_bound})")
    lines.append(f"most admission shards of one account: {report.most_admission_shards}")
    if report.audits:
        lines.append("audits beside the clients: " + ", ".join(f"{k} {v}" for k, v in sorted(report.audits.items())))
    if report.settings.get("partition_limits"):
        lines.append(f"partition limits x{report.settings['partition_limits']}; the emulator refused:")
        lines += [f"  {count:>7}  {place}" for place, count in report.partition_throttles.items()] or ["  nothing"]
    lines.append(f"time to quiescence after the clients stopped: {report.seconds_to_quiescence} s")
    lines.append(f"total time: {report.seconds_total} s")
    lines.append(f"violations: {report.violations}")
    return "\n".join(lines)


def _periods_title(settings: dict[str, object]) -> str:
    return f", periodic quotas over {settings['boundaries']} midnights" if settings.get("periods") else ""


def main(argv: list[str] | None = None) -> int:
    settings, report_path = parse_args(argv)
    logging.basicConfig(level=logging.WARNING)
    os.environ.setdefault("JSII_SILENCE_WARNING_END_OF_LIFE_NODE_VERSION", "20")
    report = run(settings)
    print(render(report))
    with open(report_path, "w", encoding="utf-8") as output:
        output.write(report.to_json())
    print(f"report written to {report_path}")
    return 1 if report.violations else 0


if __name__ == "__main__":
    sys.exit(main())
