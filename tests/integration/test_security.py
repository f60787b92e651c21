"""Authorization through the whole system (docs/security.md): every method needs a SigV4 signature,
a tenant session reaches its own account's paths only, and only an admin sets a limit. A refused
request is answered by API Gateway before the function runs, so it writes nothing.

Against a deployment (API_URL), the tenant tests assume the stack's tenant role: set
TENANT_ROLE_ARN to its `TenantRoleArn` output.

The refused requests go over raw HTTP (tests/support/raw_api.py): unsigned, forged, stale or
foreign signatures, which the product's client never sends, and IAM's own answers to them; what
the admin sets up and reads back goes through the client."""

from __future__ import annotations

import datetime
import os
import uuid
from typing import Any

import boto3
import pytest
from botocore.credentials import Credentials
from hybrid_counter_client import AccountNotFound, LimitsClient

from infra.outputs import TENANT_TAG_KEY
from local.product import SINGLE_ATTEMPT, api_client, new_account
from local.sigv4 import MAX_CLOCK_SKEW, sign
from tests.integration.conftest import RunningSystem
from tests.support.raw_api import RawApi


def tenant_api(running_system: RunningSystem, account_id: str) -> RawApi:
    """The API as a tenant session for `account_id` would call it."""
    if running_system.runtime is not None:
        identity = running_system.runtime.settings.identities.tenant(account_id)  # type: ignore[attr-defined]
        return running_system.api.signed_as(identity.credentials())
    role_arn = os.environ.get("TENANT_ROLE_ARN")
    if not role_arn:
        # `make test-deployed` sets it from the stack's outputs; a bare pytest run may not have.
        pytest.skip("against a deployment, set TENANT_ROLE_ARN to the stack's TenantRoleArn output")
    session = boto3.client("sts").assume_role(
        RoleArn=role_arn,
        RoleSessionName=f"it-{account_id}"[:64],
        Tags=[{"Key": TENANT_TAG_KEY, "Value": account_id}],
    )["Credentials"]
    credentials = Credentials(session["AccessKeyId"], session["SecretAccessKey"], session["SessionToken"])
    return running_system.api.signed_as(credentials)


def tenant_client(running_system: RunningSystem, account_id: str) -> LimitsClient:
    """The product's client as a tenant session for `account_id`, one request per call."""
    raw = tenant_api(running_system, account_id)
    return api_client(raw.base_url, raw.credentials, raw.region, retry=SINGLE_ATTEMPT)


def unsigned(running_system: RunningSystem) -> RawApi:
    return running_system.api.signed_as(None)


def nothing_written(running_system: RunningSystem, account_id: str) -> None:
    usage = running_system.client.get_account(account_id)
    assert (usage.best_effort, usage.used) == (0, 0)
    assert list(running_system.client.list_resources(account_id)) == []


def refused(reply: Any, message: str) -> None:
    """A 403 from API Gateway itself, in the API's error envelope (infra/gateway_errors.py)."""
    assert reply.status == 403, reply.body
    error = reply.body["error"]
    assert message in error["message"]
    assert error["code"] in ("MissingAuthenticationToken", "InvalidSignature", "AccessDenied")
    assert error["requestId"]


pytestmark = pytest.mark.usefixtures("iam_enforced")


def test_an_unsigned_request_is_refused_and_writes_nothing(running_system: RunningSystem) -> None:
    account_id = new_account(running_system.client, prefix="sec")
    refused(unsigned(running_system).create(account_id), "Missing Authentication Token")
    refused(
        unsigned(running_system).request("PUT", f"/accounts/{account_id}", {"limit": 99}),
        "Missing Authentication Token",
    )
    nothing_written(running_system, account_id)
    assert running_system.client.get_account(account_id).limit == 10


def test_a_request_signed_with_a_wrong_secret_is_refused_and_writes_nothing(running_system: RunningSystem) -> None:
    account_id = new_account(running_system.client, prefix="sec")
    real = running_system.api.credentials
    forged = running_system.api.signed_as(Credentials(real.access_key, "not-the-secret", real.token))
    refused(forged.create(account_id), "signature")
    nothing_written(running_system, account_id)


def test_a_request_signed_more_than_five_minutes_ago_is_refused(running_system: RunningSystem) -> None:
    account_id = new_account(running_system.client, prefix="sec")
    path = f"/accounts/{account_id}/resources"
    then = datetime.datetime.now(datetime.UTC) - MAX_CLOCK_SKEW - datetime.timedelta(minutes=1)
    body = b'{"name": "late"}'
    headers = sign(
        running_system.api.credentials,
        running_system.api.region,
        "POST",
        running_system.api.base_url + path,
        body,
        {"Content-Type": "application/json"},
        at=then,
    )
    refused(unsigned(running_system).request("POST", path, {"name": "late"}, headers), "Signature expired")
    nothing_written(running_system, account_id)


def test_a_tenant_works_on_its_own_account_and_nowhere_else(running_system: RunningSystem) -> None:
    mine, theirs = (new_account(running_system.client, prefix="sec", limit=3) for _ in range(2))
    me = tenant_api(running_system, mine)
    created = me.create(mine)
    assert created.status == 201
    assert me.request("GET", f"/accounts/{mine}").status == 200
    assert me.request("GET", f"/accounts/{mine}/resources/{created.body['resourceId']}").status == 200
    assert me.delete(mine, created.body["resourceId"]).status == 204
    refused(me.create(theirs), "is not authorized")
    refused(me.request("GET", f"/accounts/{theirs}"), "is not authorized")
    refused(me.request("GET", f"/accounts/{theirs}/resources"), "is not authorized")
    nothing_written(running_system, theirs)


def test_a_tenants_wrong_method_is_refused_by_its_policy_or_answered_405(running_system: RunningSystem) -> None:
    """A tenant's policy allows GET on its account's path and any method under its resources: a
    wrong method on the first is API Gateway's 403, on the others the function's 405."""
    mine = new_account(running_system.client, prefix="sec", limit=3)
    me = tenant_api(running_system, mine)
    refused(me.request("DELETE", f"/accounts/{mine}"), "is not authorized")
    wrong = me.request("PATCH", f"/accounts/{mine}/resources")
    assert (wrong.status, wrong.headers["Allow"], wrong.body["error"]["code"]) == (405, "GET, POST", "MethodNotAllowed")
    nothing_written(running_system, mine)


def test_dot_segments_in_a_path_do_not_lead_to_another_tenant(running_system: RunningSystem) -> None:
    """IAM matches the path as sent, `/accounts/<mine>/resources/*`; the function routes it as sent
    too, so `../..` can only miss a route, never reach another account."""
    mine, theirs = (new_account(running_system.client, prefix="sec", limit=3) for _ in range(2))
    sneaky = f"/accounts/{mine}/resources/../../{theirs}/resources"
    reply = tenant_api(running_system, mine).request("POST", sneaky, {"name": "x"})
    assert reply.status in (400, 403, 404), reply.body
    nothing_written(running_system, theirs)


def test_only_an_admin_sets_a_limit(running_system: RunningSystem) -> None:
    account_id = new_account(running_system.client, prefix="sec", limit=3)
    tenant = tenant_api(running_system, account_id)
    refused(tenant.request("PUT", f"/accounts/{account_id}", {"limit": 1000}), "is not authorized")
    newcomer = f"new-{uuid.uuid4().hex[:8]}"  # nor may a tenant create its own account
    refused(
        tenant_api(running_system, newcomer).request("PUT", f"/accounts/{newcomer}", {"limit": 5}), "is not authorized"
    )
    with pytest.raises(AccountNotFound):
        running_system.client.get_account(newcomer)
    assert running_system.client.get_account(account_id).limit == 3
    running_system.client.put_account(account_id, limit=4)
    assert running_system.client.get_account(account_id).limit == 4
