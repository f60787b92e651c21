"""A short chaos run in every `make test`: faults of every kind, then every invariant checked.

`make chaos` runs the long version; this one keeps the checker honest too, by planting a known bug
and expecting it to be caught.
"""

from __future__ import annotations

import re

from chaos.run import DEFAULT_RATES, ChaosSettings, run


def test_a_short_chaos_run_holds_every_invariant_with_hot_accounts_spread_over_shards() -> None:
    """Faults of every kind, and DynamoDB's partition limits at 1/100 (shard growth scaled with
    them): the hot accounts grow admission shards while the faults land, and every invariant (the
    sum of room and admitted over the shards among them) holds at every sampled instant. In units:
    the creates take random amounts and the clients resize live resources, racing the deletes
    (`--amounts`), so each check sums amounts, growths are admitted on the shards and shrinks free
    units while the shards grow."""
    report = run(ChaosSettings(seed=11, operations=150, clients=6, partition_limits="1/100", amounts=True))
    print(report.to_json())
    assert report.seconds_to_quiescence is not None
    assert {check.name: check.violations for check in report.checks if check.violations} == {}
    assert sum(report.faults.values()) > 0
    assert report.operations.get("create 201", 0) > 0
    assert report.operations.get("resize 200", 0) > 0
    assert any(check.name.startswith("every resource holds an amount") for check in report.checks)
    # Under scaled limits an account grows at a scaled rate (2.5 writes/s on one shard at 1/100),
    # which the hot accounts always pass. Whether the emulator refused anything depends on this
    # machine's speed (a slow one may never reach 10 WCU/s on an item), so it is reported, not asserted.
    assert report.most_admission_shards > 1


def test_the_chaos_checks_catch_a_consumer_that_ignores_counter_processed_and_periods_told_by_the_wall_clock() -> None:
    """Two planted bugs in one run, each caught by its own checks. A consumer that counts a create
    without checking it was not counted already counts a redelivered record twice. With periodic
    quotas and the runtime's clock over a midnight (`--periods`), a calendar that tells periods by
    the wall clock, not by the injected clock's instant it is given, puts every usage record in
    today's real period: none is where the run's clock says it was created (so this run also shows
    that every function reads the shifted clock: without it, the same checks fail)."""
    settings = ChaosSettings(
        seed=11,
        operations=60,
        clients=4,
        mutation="consumer-ignores-counter-processed,periods-told-by-the-wall-clock",
        events_timeout=5,
        periods=True,
        boundaries=1,
    )
    report = run(settings)
    failed = {check.name: check.violations for check in report.checks if check.violations}
    assert "eventual = existing counted resources at every sampled instant" in failed
    # The wall clock's period is none of the run's: its records are missing from them all.
    assert "periodic: the clients created records in each of the run's periods" in failed
    missing = failed["every acknowledged, undeleted resource exists exactly once"]
    assert all("/builds/" in violation for violation in missing if violation != "..."), missing


def test_the_chaos_checks_catch_a_consumer_that_drops_the_crossings_down() -> None:
    """The run ends with each hot quota filled to its limit and counted there, then every resource
    deleted (`drain`): each threshold a quota crossed up is then crossed down, and the consumer
    drops that crossing. Whether the clients' own creates took a quota's counter past a threshold
    was the run's timing's: a loaded machine once ended a run with no crossing up at all. No
    create crashes after its reservation here: its slot would stay held until a heal a minute on,
    and the fill stop short of the thresholds."""
    settings = ChaosSettings(
        seed=11,
        operations=30,
        clients=4,
        rates={**DEFAULT_RATES, "crash_after_write": 0.0},
        mutation="consumer-drops-downward-crossings",
        limit_changes=0,
        events_timeout=5,  # the crossings dropped never come: no need to wait the minute a correct run may take
        drain=True,
    )
    report = run(settings)
    print(report.to_json())
    failed = {check.name: check.violations for check in report.checks if check.violations}
    # Each hot quota announced its every threshold reached and never left: whatever else the run's
    # path exposes (the outbox against the counter's path, a threshold crossed up twice in a row).
    unsettled = failed["usage events: once quiet, the last crossings announced are where the usage stands"]
    assert sorted(violation.split(":")[0] for violation in unsettled) == ["hot-0", "hot-1"], unsettled
    assert all("announced [80, 100], usage 0 of 5" in violation for violation in unsettled), unsettled


def test_the_chaos_checks_catch_ignored_limit_changes_and_resizes_counted_from_nothing() -> None:
    """Two planted bugs in one run, each caught by its own check (apart, each fails only its own:
    docs/chaos.md). A limit lowered to a quota's usage reaches 100% with no count moving: a
    consumer that takes the change's record as done leaves that crossing unannounced (the run's
    last changes, made once the clients stopped, are such lowerings). A consumer that counts a
    resize as if the counter held nothing for the resource adds its new amount, not the
    difference: only amounts and resizes show it, and the counter then holds more than the
    counted resources' units. The clients' resizes show it only when counted after their
    resource's create (counted together, the create counts the resource's amount then): the run
    ends with a shrink of a counted resource in each account (`resize_once_counted`), so one does
    whatever the timing (a loaded machine once counted none apart)."""
    settings = ChaosSettings(
        seed=2,
        operations=60,
        clients=4,
        amounts=True,
        mutation="consumer-ignores-limit-changes,consumer-counts-a-resize-from-nothing",
        limit_changes=1,
        events_timeout=5,
        resize_once_counted=True,
    )
    report = run(settings)
    print(report.limit_changes, report.operations)
    assert report.operations.get("resize 200", 0) > 0
    failed = {check.name for check in report.checks if check.violations}
    assert "usage events: once quiet, the last crossings announced are where the usage stands" in failed
    assert "eventual = existing counted resources at every sampled instant" in failed


def test_the_chaos_checks_catch_a_type_returned_to_its_plan_that_misses_the_plans_later_versions() -> None:
    """A type returned to its plan (the grant the plans' admin gives ends, or an override it
    returns) that leaves the account's membership as dated never takes the plan's later versions:
    once the clients stopped the admin returns every override, then changes every plan, and the
    plans' check finds such a type at its plan's older limit. Each path to a return comes before
    those last changes, whatever the timing. In the same run, an account's erasure that keeps its
    outbox items: the account the admin deleted has one at least (its Account Deleted event's),
    which the deletion's check finds left once the erasure is due."""
    settings = ChaosSettings(
        seed=2,
        operations=40,
        clients=3,
        mutation="returned-types-leave-the-membership-as-dated,erasure-keeps-the-outbox-items",
        limit_changes=0,
        events_timeout=5,
        types=2,
        plans=True,
        plan_changes=4,
    )
    report = run(settings)
    print(report.plan_changes)
    failed = {check.name: check.violations for check in report.checks if check.violations}
    assert any(name.startswith("plans: ") for name in failed), failed
    [erased] = [name for name in failed if name.startswith("account deletion: ")]
    assert any("/ EVENT#DELETED" in violation for violation in failed[erased]), failed[erased]


def test_writes_that_land_and_answer_500_late_are_invisible_to_callers() -> None:
    """The only fault: a share of single-item writes land and answer 500 two seconds later, after
    the consumer has acted. Callers see no 5xx, no lease is left, the stored counters are exact
    without a heal, and each account then admits exactly up to its limit."""
    rates = dict.fromkeys(ChaosSettings().rates, 0.0) | {"lands_answers_late": 0.15}
    report = run(ChaosSettings(seed=3, operations=80, clients=4, rates=rates, fatal=False, late_single_item_only=True))
    print(report.to_json())
    assert report.faults["lands_answers_late"] > 0
    assert report.client_retries == 0
    assert {check.name: check.violations for check in report.checks if check.violations} == {}
    assert any(check.name.startswith("only ambiguous writes injected") for check in report.checks)


def test_a_short_chaos_run_with_three_types_per_account_on_plans_holds_every_invariant_per_type() -> None:
    """Each account holds three limits (the default type and two others, which plans give) and the
    clients race creates and deletes across them while an admin changes the plans, moves accounts
    between them, gives expiring grants and returns overrides: every check (sampled, end state, DLQ
    2, heal, usage events, Limit Refused events against the API's refusal lines, every account at
    its plan's limits once quiet) holds per (account, type), so no type's write takes, frees or
    heals another's slot, nor counts another's refusals. And one more account is deleted while the
    clients create in it: once its erasure is due nothing of it is left, no acknowledged create
    either, and one Account Deleted event announced it."""
    report = run(
        ChaosSettings(
            seed=5, operations=150, clients=6, accounts=2, hot_accounts=1, types=3, refusal_events=True, plans=True
        )
    )
    # Every step was taken, those whose marks the clients did not reach once they stopped: the
    # default eight (two of each kind) give two plan changes and two switches, and the end one
    # change per plan.
    plan_changes = [change for change in report.plan_changes if change.startswith("plan-")]
    switches = [change for change in report.plan_changes if re.fullmatch(r"[\w-]+: plan-\w -> plan-\w", change)]
    assert (len(plan_changes), len(switches)) == (4, 2), report.plan_changes
    assert report.refusals["refusals announced"] > 0
    print(report.to_json())
    assert report.seconds_to_quiescence is not None
    assert {check.name: check.violations for check in report.checks if check.violations} == {}
    assert sum(report.faults.values()) > 0
    assert set(report.creates_per_type) == {"default", "type-1", "type-2"}
    assert all(count > 0 for count in report.creates_per_type.values())
    # One account was deleted while the clients created in it, and erased once that was due.
    assert any(": deleted, requested at" in change for change in report.plan_changes)
    assert report.operations.get("create 404", 0) > 0  # its creates after the DELETE, the deleter's own among them
    [erased] = [check for check in report.checks if check.name.startswith("account deletion: once")]
    assert erased.checked > 0
    # The usage events were checked per (account, type) too, and there were crossings to check.
    [sided] = [check for check in report.checks if check.name.startswith("usage events: each event's usage")]
    assert sided.checked > 0
