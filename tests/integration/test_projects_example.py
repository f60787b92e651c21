"""The worked example (examples/projects): a SaaS's projects service guarding its projects with the
limits API, each project a slot of its tenant's `projects` type. Its handler runs here, in the test
process, on API Gateway proxy events as Lambda would give them; its table is created in the running
system's emulator from the example's own stack; its limits client calls the running system through
the local API Gateway, signed as the tenant (the local gateway knows the stack's tenant and admin
sessions, not the example function's role, which stack.py grants the same paths to). Failures are
injected on the example's own DynamoDB client."""

from __future__ import annotations

import json
import os
import re
import socket
import subprocess
import threading
import time
import uuid
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import boto3
import pytest
from botocore.httpsession import URLLib3Session
from hybrid_counter_client import LimitsClient, ResourceNotFound, RetryPolicy

from examples.projects import handler, try_locally
from examples.projects.handler import ORPHAN_AFTER, RESOURCE_TYPE, Projects
from examples.projects.try_locally import LOCAL_DIR_ENV
from local.dynamodb_wire import error_body
from local.faults import ANSWERS, answer_on_the_wire, aws_response, on_matching_send
from local.http_client import poll
from tests.integration.conftest import RunningSystem
from tests.integration.test_python_client import admin_of, new_account, tenant_of
from tests.support.api_events import proxy_event
from tests.support.lambda_context import FakeLambdaContext
from tests.support.projects_example import synthesized_template, table_definition

pytestmark = pytest.mark.shares_setup  # the example project its module fixture deploys


class SimulatedCrash(Exception):
    """The function died there (nothing in the example catches this)."""


@pytest.fixture(scope="module")
def projects_table(running_system: RunningSystem) -> Iterator[str]:
    """The example's table, as its stack defines it, in the running system's emulator."""
    if running_system.runtime is None:
        pytest.skip("creates the example's table in the local emulator; API_URL points at a deployment")
    name = f"projects-{uuid.uuid4().hex[:8]}"
    dynamodb = boto3.client("dynamodb", **emulator(running_system))
    dynamodb.create_table(TableName=name, **table_definition(synthesized_template()))
    dynamodb.get_waiter("table_exists").wait(TableName=name)
    yield name
    dynamodb.delete_table(TableName=name)


def emulator(running_system: RunningSystem) -> dict[str, Any]:
    return {
        "endpoint_url": running_system.runtime.settings.endpoint_url,  # type: ignore[attr-defined]
        "region_name": "us-east-1",
        "aws_access_key_id": "testing",
        "aws_secret_access_key": "testing",
    }


@pytest.fixture
def admin(running_system: RunningSystem) -> LimitsClient:
    return admin_of(running_system)


@dataclass
class Tenant:
    """A tenant of the SaaS, with an account in the limits service, calling the example's API."""

    account_id: str
    projects: Projects  # what the function builds at its cold start, signed as this tenant
    admin: LimitsClient
    other: Callable[..., Projects]  # another instance of the service (another execution environment)

    def call(
        self, method: str, path: str, body: Any = None, key: str | None = None, via: Projects | None = None
    ) -> Any:
        """The example's answer, as (status, JSON body), to a request of this tenant."""
        headers = {"Idempotency-Key": key} if key else {}
        event = proxy_event(method, path, int(time.time() * 1000), body, headers)
        event["requestContext"]["authorizer"] = {"claims": {"custom:tenant": self.account_id}}
        reply = handler.handler(event, FakeLambdaContext(), projects=via or self.projects)
        return reply["statusCode"], json.loads(reply["body"]) if reply.get("body") else None

    def create(self, name: str, key: str | None = None, via: Projects | None = None) -> Any:
        return self.call("POST", "/projects", {"name": name}, key or f"create-{name}", via)

    def slots(self) -> list[str]:
        """The tenant's `projects` slots, as the limits service lists them."""
        return sorted(r.resource_id for r in self.admin.list_typed_resources(self.account_id, RESOURCE_TYPE))

    def counted(self, expected: int) -> None:
        """The limits service counts `expected` projects (at once, and in its eventual counter too),
        and nothing of the account's default type, whose limit is another's."""
        usage = poll(
            lambda: self.admin.get_type(self.account_id, RESOURCE_TYPE), lambda t: t.eventual == expected, timeout=60
        )
        assert (usage.best_effort, usage.used) == (expected, expected)
        assert self.admin.get_account(self.account_id).used == 0


@pytest.fixture
def new_tenant(running_system: RunningSystem, projects_table: str, admin: LimitsClient) -> Callable[[int], Tenant]:
    def service(account_id: str, limits_url: str | None = None, retry: RetryPolicy = handler.LIMITS_RETRY) -> Projects:
        table = boto3.resource("dynamodb", config=handler.DYNAMODB_CONFIG, **emulator(running_system)).Table(
            projects_table
        )
        return Projects(table, tenant_of(running_system, account_id, api_url=limits_url, retry=retry))

    def make(limit: int) -> Tenant:
        """A tenant whose plan allows `limit` projects; its account's default type has a limit of
        its own (10), which the example must not spend."""
        account_id = new_account(admin, limit=10)
        admin.put_type_limit(account_id, RESOURCE_TYPE, limit=limit)
        return Tenant(account_id, service(account_id), admin, lambda **options: service(account_id, **options))

    return make


def table_events(projects: Projects) -> Any:
    """The event emitter of the example's own DynamoDB client, where faults are injected."""
    return projects.table.meta.client.meta.events


def is_project_put(params: Any) -> bool:
    return "deleted" not in params["Item"]  # not a tombstone


def throttle_project_puts(projects: Projects, while_: Callable[[], bool] = lambda: True) -> list[int]:
    """DynamoDB refuses the project's put as throttled, on every attempt of the SDK's (but not the
    tombstone's put). Returns a one-item list counting the refusals."""
    throttled = error_body(
        "ProvisionedThroughputExceededException", "The level of configured provisioned throughput was exceeded"
    )

    def matches(params: Any) -> bool:
        return while_() and is_project_put(params)

    return answer_on_the_wire(table_events(projects), "dynamodb", "PutItem", matches, 400, throttled)


def unreachable_limits_url() -> str:
    with socket.socket() as free:
        free.bind(("127.0.0.1", 0))
        port = free.getsockname()[1]
    return f"http://127.0.0.1:{port}/"  # nothing listens there now: every call is refused


def later(delay: timedelta) -> datetime:
    return datetime.now(UTC) + delay


# --- the paths that succeed ----------------------------------------------------------------------


def test_creates_up_to_the_limit_then_answers_409(new_tenant: Callable[[int], Tenant]) -> None:
    tenant = new_tenant(2)
    status, web = tenant.create("web")
    assert (status, web["name"]) == (201, "web")
    assert tenant.create("api")[0] == 201

    status, refused = tenant.create("etl")
    assert (status, refused["error"]["code"]) == (409, "ProjectLimitReached")
    assert tenant.call("GET", "/projects/etl")[0] == 404  # not written
    assert tenant.call("GET", "/projects/web") == (200, web)
    assert sorted(p["name"] for p in tenant.call("GET", "/projects")[1]["items"]) == ["api", "web"]
    tenant.counted(2)


def test_a_delete_frees_its_slot(new_tenant: Callable[[int], Tenant]) -> None:
    tenant = new_tenant(1)
    assert tenant.create("web")[0] == 201
    assert tenant.create("api")[0] == 409

    assert tenant.call("DELETE", "/projects/web") == (204, None)
    assert tenant.call("GET", "/projects/web")[0] == 404
    assert tenant.call("DELETE", "/projects/nothing")[0] == 404
    assert tenant.create("api")[0] == 201
    assert tenant.call("GET", "/projects")[1]["items"][0]["name"] == "api"
    tenant.counted(1)


def test_a_create_retried_with_the_same_key_takes_one_slot(new_tenant: Callable[[int], Tenant]) -> None:
    tenant = new_tenant(5)
    first = tenant.create("web", key="order-7")
    assert first[0] == 201
    assert tenant.create("web", key="order-7") == first  # the same project, answered as the first time
    assert len(tenant.slots()) == 1
    tenant.counted(1)

    status, mismatch = tenant.create("api", key="order-7")
    assert (status, mismatch["error"]["code"]) == (422, "IdempotencyKeyMismatch")
    assert tenant.call("DELETE", "/projects/web")[0] == 204
    status, used = tenant.create("web", key="order-7")  # a very late retry: the project stays deleted
    assert (status, used["error"]["code"]) == (409, "IdempotencyKeyUsed")
    assert tenant.call("GET", "/projects/web")[0] == 404
    tenant.counted(0)


def test_requests_the_api_does_not_take(new_tenant: Callable[[int], Tenant]) -> None:
    tenant = new_tenant(5)
    assert tenant.call("POST", "/projects", {"name": "web"})[0] == 422  # no Idempotency-Key
    assert tenant.create("Not A Slug")[0] == 422
    assert tenant.call("GET", "/projects/x%2F..")[0] == 422
    assert tenant.slots() == []


# --- the example's own write fails after the slot was taken ------------------------------------


def test_a_name_another_project_holds_gives_the_slot_back(new_tenant: Callable[[int], Tenant]) -> None:
    """The conditional write fails on a real item: another request's project of that name."""
    tenant = new_tenant(5)
    assert tenant.create("web", key="first")[0] == 201
    held = tenant.slots()

    status, taken = tenant.create("web", key="second")
    assert (status, taken["error"]["code"]) == (409, "ProjectExists")
    assert tenant.slots() == held  # the second request's slot was given back
    tenant.counted(1)


def test_a_throttled_write_gives_its_slot_back_exactly_once(new_tenant: Callable[[int], Tenant]) -> None:
    tenant = new_tenant(5)
    assert tenant.create("kept")[0] == 201
    kept = tenant.slots()
    throttling = threading.Event()
    throttling.set()
    throttled = throttle_project_puts(tenant.projects, while_=throttling.is_set)

    status, failed = tenant.create("doomed", key="k-doomed")
    assert (status, failed["error"]["code"]) == (503, "NotCreated")
    assert throttled == [handler.DYNAMODB_CONFIG.retries["total_max_attempts"]]  # every attempt of the SDK's
    assert tenant.call("GET", "/projects/doomed")[0] == 404
    assert tenant.slots() == kept  # usage is back where it was
    tenant.counted(1)

    # A second give-back of that slot (a retry after an ambiguous failure) frees nothing more.
    tombstone = tenant.projects.table.get_item(Key={"tenant_id": tenant.account_id, "name": "doomed"})["Item"]
    tenant.projects.give_back(tenant.account_id, tombstone["slot_id"])
    assert tenant.slots() == kept
    tenant.counted(1)

    throttling.clear()
    assert tenant.create("doomed", key="k-doomed")[1]["error"]["code"] == "IdempotencyKeyUsed"
    assert tenant.create("doomed", key="k-doomed-2")[0] == 201  # a new key: a new project
    tenant.counted(2)


def test_a_write_still_in_flight_when_its_slot_is_given_back_never_lands(
    new_tenant: Callable[[int], Tenant],
) -> None:
    """Two deliveries of one request (the caller retried while the first was slow): the second has
    its slot, then the first is throttled and gives that slot back, then the second's write comes.
    The first's tombstone refuses it: no project without a slot."""
    tenant = new_tenant(5)
    first, second = tenant.projects, tenant.other()
    throttle_project_puts(first)
    answers: list[Any] = []

    def first_gives_up_meanwhile(params: Any, **_: Any) -> None:
        if is_project_put(params) and not answers:
            answers.append(tenant.create("web", key="k1", via=first))

    table_events(second).register("provide-client-params.dynamodb.PutItem", first_gives_up_meanwhile)
    status, late = tenant.create("web", key="k1", via=second)
    assert answers[0][1]["error"]["code"] == "NotCreated"
    assert (status, late["error"]["code"]) == (503, "NotCreated")
    assert tenant.call("GET", "/projects/web")[0] == 404
    assert tenant.slots() == []
    tenant.counted(0)


def test_a_write_that_landed_before_its_error_is_kept(new_tenant: Callable[[int], Tenant]) -> None:
    """The put lands, its answer is a 500; the SDK's retry is refused (the item is there): the
    project is this request's, and its slot stays."""
    tenant = new_tenant(5)
    http = URLLib3Session()
    landed: list[int] = []

    def land_then_fail(request: Any) -> Any:
        if landed:
            return None
        landed.append(http.send(request).status_code)
        status, body = ANSWERS["InternalServerError"]
        return aws_response(request, status, body)

    on_matching_send(table_events(tenant.projects), "dynamodb", "PutItem", is_project_put, land_then_fail)
    status, project = tenant.create("web")
    assert landed == [200]
    assert (status, project["name"]) == (201, "web")
    assert tenant.call("GET", "/projects/web") == (200, project)
    tenant.counted(1)


# --- a crash between the reserve and the write --------------------------------------------------


def crash_before_the_write(projects: Projects) -> None:
    """The function dies once, after its reserve and before its project's put is sent."""
    crashed: list[bool] = []

    def crash(request: Any) -> None:
        if not crashed:
            crashed.append(True)
            raise SimulatedCrash("the function died before its write")

    on_matching_send(table_events(projects), "dynamodb", "PutItem", is_project_put, crash)


def test_a_crash_between_reserve_and_write_converges_on_a_retry(new_tenant: Callable[[int], Tenant]) -> None:
    tenant = new_tenant(5)
    crash_before_the_write(tenant.projects)
    with pytest.raises(SimulatedCrash):
        tenant.create("web", key="k1")
    assert len(tenant.slots()) == 1  # the slot is held, no project yet
    assert tenant.call("GET", "/projects")[1]["items"] == []

    assert tenant.create("web", key="k1", via=tenant.other())[0] == 201  # the caller retries
    assert len(tenant.slots()) == 1
    tenant.counted(1)


def test_a_slot_a_crash_left_is_given_back_by_reconcile(new_tenant: Callable[[int], Tenant]) -> None:
    tenant = new_tenant(5)
    assert tenant.create("kept")[0] == 201
    kept = tenant.slots()
    crash_before_the_write(tenant.projects)
    with pytest.raises(SimulatedCrash):
        tenant.create("web", key="k1")
    (left,) = set(tenant.slots()) - set(kept)

    reconciler = tenant.other()
    assert reconciler.reconcile(tenant.account_id, later(timedelta(0))) == []  # a create may still be running
    assert reconciler.reconcile(tenant.account_id, later(ORPHAN_AFTER + timedelta(minutes=1))) == [left]
    assert tenant.slots() == kept
    tenant.counted(1)
    assert tenant.create("web", key="k1")[1]["error"]["code"] == "IdempotencyKeyUsed"  # a retry after it


def test_a_create_retried_while_its_project_is_deleted_does_not_bring_it_back(
    new_tenant: Callable[[int], Tenant],
) -> None:
    """The retry is given the slot back, then the project is deleted (and its slot released), then the
    retry's write comes: it finds the slot's tombstone, and the project stays deleted."""
    tenant = new_tenant(5)
    assert tenant.create("web", key="k1")[0] == 201
    deleter = tenant.other()
    deleted: list[bool] = []

    def delete_first(params: Any, **_: Any) -> None:
        if is_project_put(params) and not deleted:
            deleted.append(True)
            deleter.delete(tenant.account_id, "web", datetime.now(UTC))

    table_events(tenant.projects).register("provide-client-params.dynamodb.PutItem", delete_first)
    status, answer = tenant.create("web", key="k1")
    assert deleted == [True]
    assert (status, answer["error"]["code"]) == (503, "NotCreated")
    assert tenant.call("GET", "/projects/web")[0] == 404
    assert tenant.slots() == []
    tenant.counted(0)


# --- the release after a delete fails -----------------------------------------------------------


def a_delete_whose_release_fails(tenant: Tenant) -> str:
    """Deletes `web` through an instance that cannot reach the limits service; returns its slot."""
    assert tenant.create("web")[0] == 201
    (slot,) = tenant.slots()
    cut_off = tenant.other(limits_url=unreachable_limits_url(), retry=RetryPolicy(max_attempts=1))
    status, answer = tenant.call("DELETE", "/projects/web", via=cut_off)
    assert (status, answer["error"]["code"]) == (503, "ServiceUnavailable")
    assert tenant.call("GET", "/projects/web")[0] == 404  # the project is gone
    assert tenant.slots() == [slot]  # its slot is still counted: one too many, never one too few
    return slot


def test_a_release_that_failed_is_finished_by_the_same_delete_again(new_tenant: Callable[[int], Tenant]) -> None:
    tenant = new_tenant(5)
    a_delete_whose_release_fails(tenant)
    assert tenant.call("DELETE", "/projects/web") == (204, None)
    assert tenant.slots() == []
    tenant.counted(0)
    assert tenant.create("web", key="again")[0] == 201  # the name is free for a new project


def test_a_release_that_failed_is_given_back_by_reconcile(new_tenant: Callable[[int], Tenant]) -> None:
    tenant = new_tenant(5)
    slot = a_delete_whose_release_fails(tenant)
    assert tenant.create("api")[0] == 201
    (kept,) = set(tenant.slots()) - {slot}

    assert tenant.projects.reconcile(tenant.account_id, later(ORPHAN_AFTER + timedelta(minutes=1))) == [slot]
    assert tenant.slots() == [kept]
    tenant.counted(1)
    with pytest.raises(ResourceNotFound):
        tenant.admin.get_typed_resource(tenant.account_id, RESOURCE_TYPE, slot)


# --- README.md's commands, as written, twice in a row ---------------------------------------------

README = Path(handler.__file__).with_name("README.md")
REPO_ROOT = README.parent.parent.parent
TRY_IT = "## Try it against `make run`"


def documented_commands() -> list[str]:
    """The commands of README.md's "Try it against `make run`": each line of its `sh` blocks."""
    section = README.read_text(encoding="utf-8").split(TRY_IT, 1)[1].split("\n## ", 1)[0]
    blocks = re.findall(r"```sh\n(.*?)```", section, re.DOTALL)
    return [line for block in blocks for line in block.splitlines() if line.strip() and not line.startswith("#")]


@pytest.fixture
def local_dir(running_system: RunningSystem) -> Path:
    """The running system's `.local` folder, as `make run` writes it: its callers' sessions (the
    system reads them there) and `endpoints.json` (tests/integration/conftest.py)."""
    if running_system.local_dir is None:
        pytest.skip("runs the example's commands against the local system; API_URL points at a deployment")
    return running_system.local_dir


def test_the_readme_commands_run_as_written_twice_in_a_row(local_dir: Path) -> None:
    """A newcomer's try: the README's commands after `make run`, then the same again. Each run is
    a new tenant that gets every answer README.md promises; the second finds the first's table."""
    commands = documented_commands()
    assert commands, f"no commands under {TRY_IT!r} in {README}"
    # Found as a newcomer's shell finds it: by the variable, as `make run` run elsewhere would be.
    environment = {name: value for name, value in os.environ.items() if not name.startswith("AWS_")}
    environment[LOCAL_DIR_ENV] = str(local_dir)
    tenants = []
    for _ in range(2):
        for command in commands:
            done = subprocess.run(
                ["bash", "-c", command], cwd=REPO_ROOT, env=environment, capture_output=True, text=True, timeout=120
            )
            assert done.returncode == 0, f"{command}\n{done.stdout}{done.stderr}"
        lines = done.stdout.splitlines()
        tenant = re.fullmatch(r"tenant (demo-[0-9a-f]{8}): may hold 2 projects .*", lines[0])
        assert tenant, done.stdout
        tenants.append(tenant[1])
        answers = [re.search(r" -> (\d{3})", line) for line in lines[1:-1]]
        assert [int(answer[1]) for answer in answers if answer] == [201, 201, 201, 409, 204, 201, 200]
        assert '"ProjectLimitReached"' in lines[4]
        assert [p["name"] for p in json.loads(lines[-2].split(" -> 200 ", 1)[1].split("  [")[0])["items"]] == [
            "api",
            "etl",
        ]
        assert lines[-1] == f"the limits service counts 2 of 2 projects for {tenant[1]}"
    assert tenants[0] != tenants[1]


def test_without_a_running_system_the_commands_say_to_start_it(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv(LOCAL_DIR_ENV, raising=False)
    monkeypatch.chdir(tmp_path)  # no .local here nor above
    assert try_locally.main([]) == 2
    assert try_locally.main(["--local-dir", str(tmp_path)]) == 2
    monkeypatch.setenv(LOCAL_DIR_ENV, str(tmp_path))
    assert try_locally.main([]) == 2
    errors = capsys.readouterr().err.splitlines()
    assert len(errors) == 3
    assert all(line.endswith("start the system with `make run` first") for line in errors), errors

    (tmp_path / ".local").mkdir()  # a file without the emulator, where the service's table is
    (tmp_path / ".local" / "endpoints.json").write_text(json.dumps({"apiUrl": "http://127.0.0.1:1"}))
    assert try_locally.main([]) == 2
    assert "endpoints.json has no emulatorUrl: start the system with `make run` first" in capsys.readouterr().err
