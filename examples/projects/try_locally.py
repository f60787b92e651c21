"""The projects service against `make run`, as its users would call it: a new tenant whose plan allows
2 projects, then each request of README.md's walk-through, with the answer it gets and the one it
should. From the repository root, while `make run` serves:

    PYTHONPATH=.:clients/python/src .venv/bin/python -m examples.projects.try_locally

It runs as often as you like: each run is a tenant of its own (`demo-` and 8 random hex digits), so
nothing an earlier run left (projects, slots, Idempotency-Keys) is in its way. The service's table,
`projects-example` in the system's emulator, is created by the first run and used by the next ones.

Where `make run` serves comes from its `.local/endpoints.json` (`--local-dir`, else the
HYBRID_COUNTER_LOCAL_DIR environment variable, else the first `.local` holding endpoints.json here or
in a parent folder); the callers' sessions from `identities.json` beside it. The control plane's
step (setting the tenant's limit) is signed as the admin; the service, as the tenant's own session,
minted there (the running system accepts it at once). On AWS the service signs with its function's
role instead (README.md, "Who may call the limits API").

Exit 0: every answer was the one expected; 1: one was not; 2: no running system found.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import sys
import time
import uuid
from dataclasses import dataclass
from typing import Any

import boto3
from hybrid_counter_client import (
    LimitsClient,
    LocalEndpoints,
    LocalSystemError,
    NoResponse,
    RetryPolicy,
    local_endpoints,
)
from hybrid_counter_client.local_run import DIRECTORY_VARIABLE as LOCAL_DIR_ENV
from hybrid_counter_client.local_run import START_FIRST

from examples.projects.handler import DYNAMODB_CONFIG, LIMITS_RETRY, RESOURCE_TYPE, Projects, handler
from local.identities import Identities, mint_tenant

TABLE_NAME = "projects-example"
# The table as stack.py defines it (tests/infra/test_projects_example_stack.py holds them equal):
# one item per (tenant, project name).
TABLE_DEFINITION: dict[str, Any] = {
    "KeySchema": [
        {"AttributeName": "tenant_id", "KeyType": "HASH"},
        {"AttributeName": "name", "KeyType": "RANGE"},
    ],
    "AttributeDefinitions": [
        {"AttributeName": "tenant_id", "AttributeType": "S"},
        {"AttributeName": "name", "AttributeType": "S"},
    ],
    "BillingMode": "PAY_PER_REQUEST",
}
PLAN_LIMIT = 2  # the demo tenant's plan: 2 projects, so the third is refused


@dataclass(frozen=True)
class LocalSystem:
    """What `make run` wrote in its `.local` folder, read by the client's `local_endpoints`: where it
    serves, and who may call it."""

    endpoints: LocalEndpoints
    emulator_url: str

    @classmethod
    def find(cls, directory: str | None = None) -> LocalSystem:
        """The `.local` folder (`directory`, else HYBRID_COUNTER_LOCAL_DIR, else the first `.local`
        holding endpoints.json in the current directory or a parent of it) and its endpoints."""
        endpoints = local_endpoints(directory)
        if endpoints.emulator_url is None:
            raise LocalSystemError(f"{endpoints.path} has no emulatorUrl: {START_FIRST}, which writes it")
        return cls(endpoints, endpoints.emulator_url)

    @property
    def api_url(self) -> str:
        return self.endpoints.api_url

    @property
    def region(self) -> str:
        return self.endpoints.region

    def limits_client(self, session: Any, retry: RetryPolicy) -> LimitsClient:
        credentials = boto3.Session(
            aws_access_key_id=session.access_key_id,
            aws_secret_access_key=session.secret_access_key,
            aws_session_token=session.session_token,
            region_name=self.region,
        )
        return LimitsClient(self.api_url, credentials, retry=retry)

    def admin(self) -> LimitsClient:
        # A few seconds, not the default 20: a stopped system is said at once.
        return self.limits_client(Identities.load(self.endpoints.identities).admin, RetryPolicy(deadline_seconds=5))

    def tenant(self, tenant_id: str) -> LimitsClient:
        return self.limits_client(mint_tenant(tenant_id, self.endpoints.identities), LIMITS_RETRY)

    def table(self) -> Any:
        """The service's table in the system's emulator: created if it is not there yet."""
        dynamodb = boto3.resource(
            "dynamodb",
            endpoint_url=self.emulator_url,
            region_name=self.region,
            config=DYNAMODB_CONFIG,
            aws_access_key_id="local",
            aws_secret_access_key="local",  # noqa: S106 (the local emulator takes any key)
        )
        client = dynamodb.meta.client
        with contextlib.suppress(client.exceptions.ResourceInUseException):  # an earlier run's (or one running now)
            client.create_table(TableName=TABLE_NAME, **TABLE_DEFINITION)
        client.get_waiter("table_exists").wait(TableName=TABLE_NAME, WaiterConfig={"Delay": 1})
        return dynamodb.Table(TABLE_NAME)


def request(projects: Projects, tenant_id: str, method: str, path: str, body: Any = None, key: str = "") -> Any:
    """The service's answer to a request of the tenant's user, as API Gateway would hand it to the
    function: the tenant is the user's `custom:tenant` claim, as the Cognito authorizer passes it."""
    event = {
        "httpMethod": method,
        "path": path,
        "headers": {"Idempotency-Key": key} if key else {},
        "body": json.dumps(body) if body else None,
        "requestContext": {
            # API Gateway's stamp of when it received the request, here on this machine's clock.
            "requestTimeEpoch": int(time.time() * 1000),  # noqa: TID251
            "authorizer": {"claims": {"custom:tenant": tenant_id}},
        },
    }
    answer = handler(event, None, projects)  # type: ignore[arg-type]
    return answer["statusCode"], json.loads(answer["body"]) if answer.get("body") else None


# README.md's walk-through: each request, and the status it should get.
WALK_THROUGH: list[tuple[str, str, Any, str, int, str]] = [
    ("POST", "/projects", {"name": "web"}, "k1", 201, "a project, one slot of the tenant's 2"),
    ("POST", "/projects", {"name": "web"}, "k1", 201, "the same request again: the same project, still one slot"),
    ("POST", "/projects", {"name": "api"}, "k2", 201, "the second slot"),
    ("POST", "/projects", {"name": "etl"}, "k3", 409, "ProjectLimitReached: the plan's 2 are taken; nothing written"),
    ("DELETE", "/projects/web", None, "", 204, "its slot is free again"),
    ("POST", "/projects", {"name": "etl"}, "k4", 201, "the freed slot"),
    ("GET", "/projects", None, "", 200, "api and etl"),
]


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m examples.projects.try_locally",
        description="The projects example against the running `make run`, as a new tenant (README.md).",
    )
    parser.add_argument(
        "--local-dir",
        help=f"the .local folder of the running `make run` (default: {LOCAL_DIR_ENV}, else the first .local "
        "holding endpoints.json here or in a parent folder)",
    )
    args = parser.parse_args(argv)
    try:
        system = LocalSystem.find(args.local_dir)
    except LocalSystemError as error:
        print(f"{parser.prog}: {error}", file=sys.stderr)
        return 2

    tenant_id = f"demo-{uuid.uuid4().hex[:8]}"
    # The control plane, at the tenant's signup: its plan's projects limit (a type of its account).
    try:
        limit = system.admin().put_type_limit(tenant_id, RESOURCE_TYPE, limit=PLAN_LIMIT)
    except NoResponse as error:
        print(f"{parser.prog}: nothing answers at {system.api_url} ({error}): {START_FIRST}", file=sys.stderr)
        return 2
    print(f"tenant {tenant_id}: may hold {limit.limit} {RESOURCE_TYPE} (the control plane set its plan's limit)")

    projects = Projects(system.table(), system.tenant(tenant_id))
    unexpected = 0
    for method, path, body, key, expected, meaning in WALK_THROUGH:
        status, answer = request(projects, tenant_id, method, path, body, key)
        unexpected += status != expected
        mark = "ok" if status == expected else f"UNEXPECTED, should be {expected}"
        shown = f" {json.dumps(answer)}" if answer else ""
        print(f"{method} {path}{f' {json.dumps(body)}' if body else ''} -> {status}{shown}  [{mark}: {meaning}]")

    usage = system.admin().get_type(tenant_id, RESOURCE_TYPE)
    print(f"the limits service counts {usage.used} of {usage.limit} {RESOURCE_TYPE} for {tenant_id}")
    if unexpected:
        print(f"{unexpected} answer(s) not as expected", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
