"""Hostile input against the whole system, driven by the project's own docs/openapi.json:
schemathesis generates requests for every operation, valid and not (unicode, huge and negative
numbers, odd ids, missing and extra fields), and checks every answer with all of its checks: no
5xx, every status, header and body as documented, invalid data refused, valid data accepted.
Every request is signed (docs/security.md).

The stateful phase chains calls as a client would, through the links the document declares (PUT an
account or a type, then read it and create in it; read it, then PUT it with its ETag in If-Match;
create, then read and delete what was created), and checks what only a sequence shows: a resource just
created can be read, a deleted one is gone. Every operation must answer a 2xx somewhere in the
sequences, so a link that breaks fails the test.

(schemathesis's pytest plugin does not run on pytest 9 yet, so its strategies and its state
machine are driven by hypothesis here.)"""

from __future__ import annotations

import sys
import uuid
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest
import requests
import schemathesis
from hypothesis import HealthCheck, Phase, given, seed, settings
from hypothesis.errors import FlakyStrategyDefinition
from hypothesis.stateful import get_state_machine_test
from schemathesis import GenerationMode
from schemathesis.checks import CHECKS

from functions.api.json_body import BodyRefused, parse_body
from local.sigv4 import sign
from scripts.openapi import OPENAPI_FILE
from tests.integration.conftest import RunningSystem

# Examples per operation and mode, each through the whole system (the gateway, a sandbox, the
# emulator). Each run draws its own (no database, no fixed seed), so CI's runs add up; the hostile
# bodies themselves go to the real handler in-process by the hundred in
# tests/handler/test_hostile_input.py.
EXAMPLES_PER_OPERATION = 20
# The types the stateful phase's accounts have: a generated type name is mapped to one of them.
# `builds` is periodic (a day), so its history answers; so do the default types' (a month).
TYPES = ["default", "seats", "builds"]
# The periods the setup gives the periodic ones.
PERIODS = {"default": "month", "builds": "day"}
UNBOUNDED = 2**53 - 1  # the largest limit (and amount) the API takes
# The stateful phase runs sequences until every operation has answered a 2xx, then stops (a
# sequence's teardown ends it), in rounds of at most 100 from a seed of their own each (fixed: a red
# run reproduces), at most three: which operations a sequence reaches follows the answers, and a
# round a running system's answers made inconsistent for hypothesis ends early (below). Seeds
# fixed here, not derived from the test's source (hypothesis's derandomize), so that renaming a
# name in the state machine does not draw other sequences.
SEQUENCES_PER_ROUND, STATEFUL_STEPS, STATEFUL_SEEDS = 100, 16, (36, 37, 38)


@pytest.fixture(autouse=True)
def untraced_generation() -> Iterator[None]:
    """This test's own thread runs hypothesis and schemathesis, which generate, send and check the
    requests; the product's code it exercises runs in the local gateway's threads (traced as
    before) and in the sandboxes. `make test` measures the coverage of the product's code, and its
    tracer, called on every Python call of this thread, took 14 of the module's 65 CPU-s (with
    coverage, 2026-11-27): this thread is not traced while the tests run."""
    tracer = sys.gettrace()
    sys.settrace(None)
    try:
        yield
    finally:
        sys.settrace(tracer)


def signed(case: schemathesis.Case, running_system: RunningSystem) -> dict[str, str]:
    """The SigV4 headers for the request `case` makes (its method, URL and body; the host and the
    date are the only headers signed, so the ones schemathesis adds do not matter). Passed as
    headers, not as a requests auth hook, so schemathesis's ignored-auth check can take them away."""
    kwargs = case.as_transport_kwargs(base_url=running_system.api.base_url)
    keep = ("method", "url", "params", "json", "data")
    prepared = requests.Request(**{key: kwargs[key] for key in keep if key in kwargs}).prepare()
    body = prepared.body.encode() if isinstance(prepared.body, str) else prepared.body
    url, method = str(prepared.url), str(prepared.method)
    headers = sign(running_system.api.credentials, running_system.api.region, method, url, body, {})
    return {name: value for name, value in headers.items() if name.lower() != "host"}


class AuthProbes:
    """Schemathesis's ignored-auth check sends each 2xx request again unsigned and with a forged
    signature, and expects both refused. Its own runner confirms that once per operation ("one
    confirmation per run is enough": enforcement is the operation's, not the input's); called
    through `Case.validate_response` it has no memory and probes every 2xx, two requests more each
    (a third of the stateful phase's). This is that memory: a test probes each operation once."""

    def __init__(self) -> None:
        self._confirmed: set[str] = set()

    def checks(self, case: schemathesis.Case, response: requests.Response, checks: list[Any]) -> list[Any]:
        if not 200 <= response.status_code < 300:
            return checks
        if case.operation.label in self._confirmed:
            return [check for check in checks if check.__name__ != "ignored_auth"]
        self._confirmed.add(case.operation.label)
        return checks


def checks_for(case: schemathesis.Case, checks: list[Any]) -> list[Any]:
    """A cursor is opaque: only one the API returned is valid, and any other is refused as
    documented (400 InvalidCursor). No generator can make a valid one, so a request carrying a
    generated cursor is not held to "valid data is accepted"; every other check still applies.
    Nor is one with a generated If-Match: it names a version the account is not at, or any
    version of a type that does not exist (`W/""` there too: a weak tag matches no version), and
    is refused as documented (412 PreconditionFailed); which versions exist is state, not form.
    Nor is a create with an Idempotency-Key, whose answer depends on what was sent with that key
    before (422 IdempotencyKeyMismatch for another body, 409 IdempotencyKeyReused once it was
    deleted). Nor is a body outside the API's JSON rules (`outside_json_rules`). Nor is a period's
    anchor (a type's, or one of a plan's quotas'): its pattern says the form of an RFC 3339
    timestamp, not the calendar (a 13th month, a 30th of February, an hour 24 match it and are
    refused as documented, 400 ValidationError). Nor is a grant's end (`expiresAt`): its pattern
    says the same form, and whether an end is taken is state, not form: it must be after the API's
    clock and within 366 days of it, on a type its account's plan gives (400 ValidationError
    otherwise: docs/plans.md, "Expiring grants"). Nor is a shadow quota (a body, or a plan's
    quota, with `"mode": "shadow"`): a periodic quota cannot be one, and whether a quota is periodic
    is its body's or, when the body leaves the period out, its state (400 ValidationError:
    docs/plans.md, "Shadow mode"). Nor is a DELETE of the type named `default`: the type routes
    share one path parameter, which names the account's own type as `default` on every other
    route, and its DELETE is refused as documented (400 DefaultTypeNotDeletable: it goes only with
    its account)."""
    carries_cursor = bool(case.query) and "cursor" in case.query
    history = {"if-match", "idempotency-key"}
    carries_history = any(name.lower() in history for name in case.headers or {})
    carries_anchor = isinstance(case.body, dict) and (
        "anchor" in case.body or any(isinstance(quota, dict) and "anchor" in quota for quota in plan_quotas(case.body))
    )
    carries_grant = isinstance(case.body, dict) and "expiresAt" in case.body
    carries_shadow = isinstance(case.body, dict) and any(
        isinstance(quota, dict) and quota.get("mode") == "shadow" for quota in [case.body, *plan_quotas(case.body)]
    )
    deletes_default = case.method.upper() == "DELETE" and (case.path_parameters or {}).get("resourceType") == "default"
    if (
        carries_cursor
        or carries_history
        or carries_anchor
        or carries_grant
        or carries_shadow
        or deletes_default
        or outside_json_rules(case)
    ):
        return [check for check in checks if check.__name__ != "positive_data_acceptance"]
    return checks


def plan_quotas(body: dict[str, Any]) -> list[Any]:
    """The quotas a plan's PUT body gives (each as a type's PUT takes it), if it is one."""
    quotas = body.get("quotas")
    return list(quotas.values()) if isinstance(quotas, dict) else []


def outside_json_rules(case: schemathesis.Case) -> bool:
    """Whether the API's JSON rules (functions/api/json_body.py) refuse the body `case` sends. The
    document states its numbers (the AttributeValue schema: integers of 38 digits, DynamoDB's
    range); what JSON Schema cannot say, it states in words in `attributes`' description: nesting
    past 32 levels, a lone surrogate, a name twice. Such a body gets a 400 ValidationError, held to
    every other check (tests/handler/test_hostile_input.py checks the rules themselves)."""
    kwargs = case.as_transport_kwargs(base_url="http://api.invalid")
    if "json" not in kwargs:
        return False
    body = requests.Request("POST", "http://api.invalid", json=kwargs["json"]).prepare().body
    try:
        parse_body(body.decode() if isinstance(body, bytes) else str(body))
    except BodyRefused:
        return True
    except ValueError:  # not JSON at all: the API refuses it as such
        return False
    return False


def loaded() -> Any:
    """The document, for generation. Every request is signed here, so schemathesis must not also
    generate requests without their Authorization header: the signature would be added back and
    the request taken for one the API should have refused (unsigned requests are checked by its
    ignored-auth check and tests/integration/test_security.py)."""
    schema = schemathesis.openapi.from_path(OPENAPI_FILE)
    schema.config.generation.update(with_security_parameters=False)
    return schema


def operations() -> list[Any]:
    return [result.ok() for result in loaded().get_all_operations()]


@pytest.mark.slow
@pytest.mark.parametrize("mode", [GenerationMode.POSITIVE, GenerationMode.NEGATIVE], ids=lambda mode: mode.value)
@pytest.mark.parametrize("operation", operations(), ids=lambda operation: operation.label)
def test_every_answer_to_generated_input_is_documented_and_never_a_5xx(
    running_system: RunningSystem, operation: Any, mode: GenerationMode
) -> None:
    checks = CHECKS.get_all()
    quiet = list(HealthCheck)

    probes = AuthProbes()

    @settings(max_examples=EXAMPLES_PER_OPERATION, deadline=None, suppress_health_check=quiet, database=None)
    @given(case=operation.as_strategy(generation_mode=mode))
    def check(case: schemathesis.Case) -> None:
        response = case.call(base_url=running_system.api.base_url, headers=signed(case, running_system), timeout=30)
        case.validate_response(response, checks=probes.checks(case, response, checks_for(case, checks)))

    check()


class EveryOperationReached(Exception):
    """Ends the stateful phase after the sequence that made every operation answer a 2xx at least once."""


@pytest.mark.slow
# About 20 sequences of up to 16 steps until every operation has answered a 2xx: 18 s alone
# (2026-11-28); a round of 100 took 60 to 150 s.
@pytest.mark.timeout(600)
def test_sequences_of_calls_keep_the_contract(running_system: RunningSystem) -> None:
    checks = CHECKS.get_all()
    workflow = loaded().as_state_machine()
    every_operation = {operation.label for operation in operations()}
    succeeded: set[str] = set()  # the operations a sequence reached and that answered 2xx
    broken: list[Exception] = []  # every contract failure a sequence met, however its round ended
    probes = AuthProbes()
    # The accounts and plan the last setup made, and whether a sequence has changed them since.
    made: dict[str, Any] = {"changed": True}

    class SignedWorkflow(workflow):  # type: ignore[misc, valid-type]
        def setup(self) -> None:
            # Sequences start with a create (schemathesis's root), which needs an account: the setup
            # makes two, and a plan, so the links a sequence follows (read, delete what was created)
            # run against real resources. The next sequence takes the same ones unless a sequence
            # changed them (a PUT or DELETE of an account, a type, an override or a plan answered
            # 2xx: a lowered limit, a type or account gone); the setup's eight PUTs then cost as much
            # as a sequence's own calls (about half of the test's, 2026-11-28).
            # Each has three types: the default one and `builds` periodic, `seats` a holding (a
            # history answers only a periodic quota: 409 QuotaNotPeriodic otherwise). Their limits
            # are the largest, so a generated amount is admitted and its resource's links followed.
            # The second account's `seats` is its plan's, overridden, so the override can be removed
            # (the first's is its own: removing an override there is 404).
            if not made["changed"]:
                self.accounts, self.plan = made["accounts"], made["plan"]
                return
            self.accounts = [f"flow-{uuid.uuid4().hex[:12]}" for _ in range(2)]
            plan = self.plan = f"flow-{uuid.uuid4().hex[:12]}"
            first, second = (f"/accounts/{account_id}" for account_id in self.accounts)
            for path, body in (
                (f"/plans/{plan}", {"quotas": {"seats": {"limit": UNBOUNDED}}}),
                *((account, {"limit": UNBOUNDED, "period": PERIODS["default"]}) for account in (first, second)),
                (f"{first}/types/seats", {"limit": UNBOUNDED}),
                (second, {"plan": plan}),
                (f"{second}/types/seats", {"limit": UNBOUNDED}),  # an override of the plan's quota
                *(
                    (f"{account}/types/builds", {"limit": UNBOUNDED, "period": PERIODS["builds"]})
                    for account in (first, second)
                ),
            ):
                assert running_system.api.request("PUT", path, body).status == 200, (path, body)
            made.update(accounts=self.accounts, plan=plan, changed=False)

        def call(self, case: schemathesis.Case, **kwargs: Any) -> Any:
            # The sequence's own accounts, types and plan: the running system holds other tests' too
            # (a plan list's first item, which a link follows, is rarely this sequence's plan).
            for name, known in (("accountId", self.accounts), ("resourceType", TYPES), ("planId", [self.plan])):
                if name not in (case.path_parameters or {}):
                    continue
                generated = str(case.path_parameters[name])
                if generated not in known:  # a linked call carries the account (type) its source answered
                    case.path_parameters[name] = known[sum(map(ord, generated)) % len(known)]
            if case.path.endswith("/override"):
                # Only the second account's `seats` can be an override (the setup makes it one; a type
                # PUT there makes it one again): a removal reached through any link is asked of it.
                case.path_parameters.update(accountId=self.accounts[1], resourceType="seats")
            if case.method == "DELETE" and case.path == "/accounts/{accountId}/types/{resourceType}":
                # A type the sequences created in is refused 409 TypeNotEmpty unless its resources go
                # with it (that refusal is the operation's own fuzz's): here they do, so a deletion
                # reached through a link removes the type and what follows meets it gone.
                case.query = {**(case.query or {}), "deleteResources": "true"}
            if case.method == "PUT" and isinstance(case.body, dict) and "period" in case.body:
                # A PUT keeps a periodic quota's period: one asking another is 409 PeriodChangeRefused
                # (tests/handler/test_periods.py), which would leave the PUTs of these quotas rarely
                # answering 2xx. The setup's period is asked instead (none for `seats`: an override of a
                # plan's holding turned periodic could not go back to the plan's quota).
                periodic = PERIODS.get((case.path_parameters or {}).get("resourceType", "default"))
                if periodic is not None:
                    case.body["period"] = periodic
                else:  # `seats` stays a holding: a plan's, so its PUT is an override that can be removed
                    case.body.pop("period", None)
                case.body.pop("anchor", None)
            if case.method == "PUT" and case.path == "/accounts/{accountId}" and isinstance(case.body, dict):
                if set(case.body) == {"plan"}:
                    # A generated plan is rarely one that exists (404 PlanNotFound): the sequence's own
                    # plan is asked, of the account the setup put on it, whose `seats` stays the plan's.
                    case.body["plan"] = self.plan
                    case.path_parameters["accountId"] = self.accounts[1]
                else:
                    # `plan` comes alone (400 ValidationError otherwise: the operation's own fuzz's):
                    # with the account's own limits it is left out, so the PUTs links reach land.
                    # The sequences reach this operation rarely (a few times a minute), and it
                    # answered 2xx first after 80 s of sequences without this (2026-11-28).
                    case.body.pop("plan", None)
            if case.method == "PUT" and case.path == "/plans/{planId}" and isinstance(case.body, dict):
                # A generated anchor is rarely a calendar's (400 ValidationError, the operation's own
                # fuzz's to check), nor is a shadow quota periodic: a plan PUT a link reached keeps
                # its quotas' periods from the start of a day, and its shadow quotas without one.
                for quota in plan_quotas(case.body):
                    if isinstance(quota, dict):
                        quota.pop("anchor", None)
                        if quota.get("mode") == "shadow":
                            quota.pop("period", None)
            if case.method == "PUT" and isinstance(case.body, dict) and "expiresAt" in case.body:
                # A generated end is in the past, too far ahead or no calendar's: always 400. Only the
                # second account's `seats` can take one (a grant of its plan's type): a day ahead there,
                # and none elsewhere, so the PUTs whose links the sequences follow still land.
                target = (case.path_parameters or {}).get("accountId"), (case.path_parameters or {}).get("resourceType")
                if target == (self.accounts[1], "seats"):
                    case.body["expiresAt"] = (datetime.now(UTC) + timedelta(days=1)).strftime("%Y-%m-%dT%H:%M:%SZ")
                else:
                    case.body.pop("expiresAt")
            return case.call(base_url=running_system.api.base_url, headers=signed(case, running_system), timeout=30)

        def teardown(self) -> None:
            if succeeded == every_operation:
                raise EveryOperationReached  # hypothesis runs no more sequences

        def validate_response(self, response: Any, case: schemathesis.Case, **kwargs: Any) -> None:
            if 200 <= response.status_code < 300:
                succeeded.add(case.operation.label)
                if case.method in ("PUT", "DELETE") and "/resources" not in case.path:
                    made["changed"] = True
            try:
                case.validate_response(response, checks=probes.checks(case, response, checks_for(case, checks)))
            except Exception as failure:
                broken.append(failure)
                raise

    for round_seed in STATEFUL_SEEDS:
        sequences = get_state_machine_test(
            SignedWorkflow,
            settings=settings(
                max_examples=SEQUENCES_PER_ROUND,
                stateful_step_count=STATEFUL_STEPS,
                # No shrinking: a failing sequence replayed against a system that moved on rarely
                # fails the same way; it is reported as it ran.
                phases=[Phase.explicit, Phase.generate],
                deadline=None,
                suppress_health_check=list(HealthCheck),
                database=None,
            ),
        )
        try:
            seed(round_seed)(sequences)()
        except EveryOperationReached:
            pass
        except FlakyStrategyDefinition:
            # A running system does not answer the same calls the same way twice (the account list
            # grows with every sequence, a replayed create meets the idempotency key it left), and
            # schemathesis chooses the next step by what answered, so hypothesis may find a sequence
            # it replays drawing otherwise, and ends the round. The round's contract failures were
            # kept as they happened: they fail the test below; what the round reached counts.
            pass
        assert not broken, broken[0]
        if succeeded == every_operation:
            break
    # The document's links carry real ids and versions from one answer to the next call: without
    # them, or with a broken one, a sequence never reaches an existing resource or account.
    assert succeeded == every_operation, sorted(every_operation - succeeded)
