"""The projects service's API: a Lambda function behind API Gateway (REST, proxy integration), with
a DynamoDB table of its own, and the hybrid counter's client guarding how many projects each
tenant may hold.

Each project holds one slot of its tenant's `projects` limit: a resource of the resource type
`projects` of the tenant's account in the limits service, whose id the project item keeps
(`slot_id`). The tenant's other limits (its account's other types: seats, API keys, ...) are
other services' own. What this code keeps true: every project has a live slot, so the
limits service never counts fewer projects than exist, and a tenant never holds more projects
than its limit. A slot can be left for a while without a project (a create that crashed half-way, a
release that failed); `Projects.reconcile` gives those back.

The table has one item per (tenant, project name):

* a project: `tenant_id`, `name`, `slot_id`, `created_at` (its slot's);
* a tombstone: the same keys and `slot_id`, with `deleted` and `expires_at` (epoch seconds): the
  slot was given back, or is being given back, and no project for that slot may be written under
  this name until `expires_at`.

README.md beside this file walks through each path and what happens when a step fails.
"""

from __future__ import annotations

import functools
import os
from datetime import UTC, datetime, timedelta
from typing import Annotated, Any

import boto3
from aws_lambda_powertools import Logger
from aws_lambda_powertools.event_handler import APIGatewayRestResolver, Response, content_types
from aws_lambda_powertools.event_handler.exceptions import ForbiddenError
from aws_lambda_powertools.event_handler.openapi.params import Header, Path
from aws_lambda_powertools.utilities.typing import LambdaContext
from boto3.dynamodb.conditions import Attr, Key
from botocore.config import Config
from botocore.exceptions import ClientError
from hybrid_counter_client import (
    HybridCounterError,
    IdempotencyKeyMismatch,
    IdempotencyKeyReused,
    LimitExceeded,
    LimitsClient,
    NoResponse,
    ResourceNotFound,
    RetryPolicy,
    ServerError,
    TooManyRequests,
)
from pydantic import BaseModel, Field

# A project's name is its id within its tenant: unique, and safe in a URL path.
NAME_PATTERN = r"^[a-z0-9][a-z0-9-]{0,62}$"
# The caller's Idempotency-Key. With SERVICE and a colon before it, it stays within the limits
# API's 255 printable ASCII characters.
IDEMPOTENCY_KEY_PATTERN = r"^[\x21-\x7e]{1,200}$"
# This service's mark in the limits service: before each key (an account's keys are shared by every
# service that reserves slots in it) and in each slot's attributes (reconcile touches these only).
SERVICE = "projects"
# The resource type whose limit holds a tenant to its plan's projects ("10 projects per plan"): the
# control plane sets it per tenant, `put_type_limit(tenant, RESOURCE_TYPE, limit=10)`.
RESOURCE_TYPE = "projects"
# How long a tombstone keeps its slot's project from being written: far longer than a request that
# still holds that slot can run (the function's timeout, 29 s), and shorter than the limits API's
# 24 h Idempotency-Key window, after which the same key reserves a slot of the same id again.
TOMBSTONE_LIFETIME = timedelta(hours=1)
# reconcile gives back a slot without a project only once it is this old, so that it never
# disturbs a create still running (at most the function's timeout).
ORPHAN_AFTER = timedelta(minutes=15)

# A throttled table fails after 3 attempts, and the limits client stops retrying after 8 s: a
# create that reserves, fails its write and gives the slot back still answers within API
# Gateway's 29 s.
DYNAMODB_CONFIG = Config(retries={"mode": "standard", "total_max_attempts": 3})
LIMITS_RETRY = RetryPolicy(deadline_seconds=8)

logger = Logger(service=SERVICE)


class ProjectNotFound(Exception):
    pass


class NameTaken(Exception):
    """Another project holds the name; this request's slot was given back."""


class NotCreated(Exception):
    """The project could not be written and its slot was given back: nothing exists for this request."""


def epoch(moment: datetime) -> int:
    return int(moment.timestamp())


class Projects:
    """The service: its table (a boto3 `Table`) and the limits service's client."""

    def __init__(self, table: Any, limits: LimitsClient) -> None:
        self.table = table
        self.limits = limits

    def create(self, tenant_id: str, name: str, request_key: str, now: datetime) -> dict[str, Any]:
        # 1. Reserve the slot before writing anything: no project exists without one, so a tenant
        #    never holds more than its limit. LimitExceeded is raised here, with nothing written.
        #    The key comes from the caller's, so a retry of this request (after a timeout, a 503,
        #    a crash of this function) is given the same slot back, never a second one.
        slot = self.limits.create_typed_resource(
            tenant_id,
            RESOURCE_TYPE,
            name,
            attributes={"service": SERVICE},
            idempotency_key=f"{SERVICE}:{request_key}",
        )
        project = {"tenant_id": tenant_id, "name": name, "slot_id": slot.resource_id, "created_at": slot.created_at}
        # 2. Write the project where no project is: a free name, or another slot's tombstone (a
        #    deleted project's). Never over this slot's own tombstone: that slot was given back
        #    (its project was deleted, or this create undone) and its project would go uncounted.
        try:
            self.table.put_item(
                Item=project,
                ConditionExpression="attribute_not_exists(tenant_id) OR "
                "(deleted = :yes AND (slot_id <> :slot OR expires_at <= :now))",
                ExpressionAttributeValues={":yes": True, ":slot": slot.resource_id, ":now": epoch(now)},
            )
            return project
        except ClientError as error:
            # Refused (the name is taken), throttled, or failed after an earlier attempt of the
            # SDK's had landed: abandon reads which, rather than guessing from the error.
            logger.info("project not written", extra={"error": error.response["Error"]["Code"], "project": name})
        # 3. Give the slot back, unless the project was written after all.
        holder = self.abandon(tenant_id, name, slot.resource_id, now)
        if holder is None:
            raise NotCreated(name)
        if holder["slot_id"] != slot.resource_id:
            raise NameTaken(name)
        return holder

    def abandon(self, tenant_id: str, name: str, slot_id: str, now: datetime) -> dict[str, Any] | None:
        """Give back a slot whose project may not have been written under `name`, unless it was.
        Returns the project holding the name: this slot's (it was written: the slot stays), another
        slot's (this one is given back), or None (given back).

        A tombstone of the slot goes in first: from then on no write of its project can land (step
        2's condition), whatever may still be in flight (an attempt of the put the SDK timed out, a
        concurrent retry of the same request). Only then is the slot released."""
        try:
            self.table.put_item(
                Item={
                    "tenant_id": tenant_id,
                    "name": name,
                    "slot_id": slot_id,
                    "deleted": True,
                    "expires_at": epoch(now + TOMBSTONE_LIFETIME),
                },
                # Not over a project, nor over the live tombstone of another slot, which keeps
                # that slot's own late writes out.
                ConditionExpression="attribute_not_exists(tenant_id) OR "
                "(deleted = :yes AND (slot_id = :slot OR expires_at <= :now))",
                ExpressionAttributeValues={":yes": True, ":slot": slot_id, ":now": epoch(now)},
            )
            holder = None
        except ClientError as error:
            holder = self.get(tenant_id, name) if conditional_failure(error) else None
            if holder is None:
                # Throttled, or the name holds another slot's tombstone: whether this slot's project
                # could still land is not settled, so the slot stays (README.md here, "A slot left behind").
                raise
            if holder["slot_id"] == slot_id:
                return holder
        self.give_back(tenant_id, slot_id)
        return holder

    def give_back(self, tenant_id: str, slot_id: str) -> None:
        """Release a slot: the client's delete, which it retries on its own. ResourceNotFound means an
        earlier attempt released it (this call's, or an earlier request's), so a give-back repeated
        after any failure frees that slot once and never another."""
        try:
            self.limits.delete_typed_resource(tenant_id, RESOURCE_TYPE, slot_id)
        except ResourceNotFound:
            logger.info("slot already given back", extra={"slot_id": slot_id})

    def delete(self, tenant_id: str, name: str, now: datetime) -> None:
        # 1. Turn the project into a tombstone, then release its slot. In this order a failure in
        #    between leaves a slot without a project (usage one too high until it is released),
        #    never a project without a slot (usage too low: the tenant could go past its limit).
        #    The tombstone also keeps a retry of this project's create from writing it again.
        try:
            project = self.table.update_item(
                Key={"tenant_id": tenant_id, "name": name},
                UpdateExpression="SET deleted = :yes, expires_at = if_not_exists(expires_at, :expires)",
                # A project, or a tombstone whose slot may not be released yet (a DELETE again).
                ConditionExpression="attribute_exists(tenant_id) AND "
                "(attribute_not_exists(deleted) OR expires_at > :now)",
                ExpressionAttributeValues={
                    ":yes": True,
                    ":expires": epoch(now + TOMBSTONE_LIFETIME),
                    ":now": epoch(now),
                },
                ReturnValues="ALL_OLD",
            )["Attributes"]
        except ClientError as error:
            if conditional_failure(error):
                raise ProjectNotFound(name) from error
            raise
        # 2. Release the slot. If the limits service cannot be reached, the caller is answered 503:
        #    the same DELETE again finds the tombstone and finishes; reconcile does otherwise.
        self.give_back(tenant_id, project["slot_id"])

    def get(self, tenant_id: str, name: str) -> dict[str, Any] | None:
        item: dict[str, Any] | None = self.table.get_item(
            Key={"tenant_id": tenant_id, "name": name}, ConsistentRead=True
        ).get("Item")
        return None if item is None or item.get("deleted") else item

    def all_of(self, tenant_id: str) -> list[dict[str, Any]]:
        """Every project of the tenant: at most its limit, so one list, in as many 1 MB pages as it takes."""
        query: dict[str, Any] = {
            "KeyConditionExpression": Key("tenant_id").eq(tenant_id),
            "FilterExpression": Attr("deleted").not_exists(),
            "ConsistentRead": True,
        }
        projects: list[dict[str, Any]] = []
        while True:
            page = self.table.query(**query)
            projects += page["Items"]
            if "LastEvaluatedKey" not in page:
                return projects
            query["ExclusiveStartKey"] = page["LastEvaluatedKey"]

    def reconcile(self, tenant_id: str, now: datetime) -> list[str]:
        """Give back the tenant's slots of this service that no project holds and that were reserved
        more than ORPHAN_AFTER before `now`: those a create left when it crashed between its reserve
        and its write and was not retried, and those whose release failed after a delete that was
        not retried. Safe at any time, next to running requests. Returns the slots given back."""
        held = {project["slot_id"] for project in self.all_of(tenant_id)}
        given_back = []
        for slot in self.limits.list_typed_resources(tenant_id, RESOURCE_TYPE):
            reserved = datetime.fromisoformat(slot.created_at)
            if slot.attributes.get("service") != SERVICE or slot.resource_id in held or now - reserved < ORPHAN_AFTER:
                continue
            try:
                holder = self.abandon(tenant_id, slot.name, slot.resource_id, now)
            except (ClientError, HybridCounterError):
                logger.exception("slot not reconciled; the next run tries again", extra={"slot_id": slot.resource_id})
                continue
            if holder is None or holder["slot_id"] != slot.resource_id:
                given_back.append(slot.resource_id)
        return given_back


def conditional_failure(error: ClientError) -> bool:
    return bool(error.response["Error"]["Code"] == "ConditionalCheckFailedException")


# --- The HTTP API ---------------------------------------------------------------------------------

app = APIGatewayRestResolver(enable_validation=True)
ProjectName = Annotated[str, Path(pattern=NAME_PATTERN)]
IdempotencyKey = Annotated[str, Header(alias="Idempotency-Key", pattern=IDEMPOTENCY_KEY_PATTERN)]


class NewProject(BaseModel):
    name: str = Field(pattern=NAME_PATTERN)


@functools.cache
def from_environment() -> Projects:
    """Built once per execution environment, at its first request, and reused by the next ones."""
    table = boto3.resource("dynamodb", config=DYNAMODB_CONFIG).Table(os.environ["PROJECTS_TABLE"])
    # Signed with the function's own role, which may call the limits API's resource paths (stack.py).
    return Projects(table, LimitsClient(os.environ["LIMITS_API_URL"], retry=LIMITS_RETRY))


def handler(event: dict[str, Any], context: LambdaContext, projects: Projects | None = None) -> dict[str, Any]:
    """Lambda's entry point. Tests pass `projects` of their own (their table and limits client)."""
    app.append_context(projects=projects or from_environment())  # type: ignore[no-untyped-call]
    return app.resolve(event, context)


def service() -> Projects:
    projects: Projects = app.context["projects"]
    return projects


def tenant() -> str:
    """The caller's tenant, as the authorizer verified it, never as the request says: here a Cognito
    user pool authorizer and the user's `custom:tenant` attribute, the tenant's account id in the
    limits service."""
    tenant_id = app.current_event.request_context.authorizer.claims.get("custom:tenant")
    if not tenant_id:
        raise ForbiddenError("no tenant")
    return str(tenant_id)


def received_at() -> datetime:
    """When API Gateway received the request: the time its writes are judged at."""
    return datetime.fromtimestamp(app.current_event.request_context.request_time_epoch / 1000, UTC)


def view(project: dict[str, Any]) -> dict[str, Any]:
    return {"name": project["name"], "createdAt": project["created_at"]}


@app.post("/projects")
def create_project(new: NewProject, idempotency_key: IdempotencyKey) -> Response[dict[str, Any]]:
    project = service().create(tenant(), new.name, idempotency_key, received_at())
    return Response(201, content_types.APPLICATION_JSON, view(project), {"Location": f"/projects/{new.name}"})


@app.get("/projects")
def list_projects() -> dict[str, Any]:
    return {"items": [view(project) for project in service().all_of(tenant())]}


@app.get("/projects/<name>")
def get_project(name: ProjectName) -> dict[str, Any]:
    project = service().get(tenant(), name)
    if project is None:
        raise ProjectNotFound(name)
    return view(project)


@app.delete("/projects/<name>")
def delete_project(name: ProjectName) -> Response[None]:
    service().delete(tenant(), name, received_at())
    return Response(204)


# What each failure answers. A 503 (or 429) may come after part of the work was done: sending the
# same request again, with the same Idempotency-Key, finishes it; NotCreated is the one 503 after
# which the key is spent.
ANSWERS: dict[type[Exception], tuple[int, str, str]] = {
    LimitExceeded: (409, "ProjectLimitReached", "the tenant holds all the projects its plan allows"),
    NameTaken: (409, "ProjectExists", "another project has this name"),
    IdempotencyKeyReused: (409, "IdempotencyKeyUsed", "this key's project was deleted, or its create undone"),
    IdempotencyKeyMismatch: (422, "IdempotencyKeyMismatch", "this key was sent before with another name"),
    ProjectNotFound: (404, "ProjectNotFound", "no such project"),
    NotCreated: (503, "NotCreated", "nothing was created: send the request again with a new Idempotency-Key"),
    TooManyRequests: (429, "TooManyRequests", "too many requests: send the same request again later"),
    ServerError: (503, "ServiceUnavailable", "the limits service is unavailable: send the same request again"),
    NoResponse: (503, "ServiceUnavailable", "the limits service did not answer: send the same request again"),
    ClientError: (503, "ServiceUnavailable", "the projects table is unavailable: send the same request again"),
}


@app.exception_handler(list(ANSWERS))  # type: ignore[untyped-decorator]
def answer(error: Exception) -> Response[dict[str, Any]]:
    status, code, message = next(answer for kind, answer in ANSWERS.items() if isinstance(error, kind))
    if status >= 500:
        logger.exception(code)
    return Response(status, content_types.APPLICATION_JSON, {"error": {"code": code, "message": message}})
