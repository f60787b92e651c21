"""API Gateway's AWS_IAM authorization, locally (local/sigv4.py, local/iam_policy.py,
local/iam_authorizer.py): over real HTTP, with the policies infra/access.py deploys. A refused
request is answered as API Gateway answers it and never reaches the function."""

from __future__ import annotations

import datetime
import hashlib
import json
import os
import shlex
import socket
import subprocess
import sys
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import pytest
from botocore.credentials import Credentials

from infra.access import ADMIN_ROLE_ID, TENANT_ROLE_ID
from infra.outputs import TENANT_TAG_KEY
from local.apigateway import ApiGateway, Route
from local.endpoints import LOCAL_DIR_ENV, Endpoints, write_endpoints
from local.gateway_responses import GatewayResponses
from local.http_client import HttpApi
from local.iam_authorizer import IamAuthorizer
from local.iam_policy import UnsupportedPolicy, allowed, execute_api_arn, string_like
from local.identities import ADMIN, TENANT, Identities, mint_tenant
from local.identities import main as identities_main
from local.sessions import RENEWED_WITHIN, SESSION_DURATION
from local.sigv4 import MAX_CLOCK_SKEW, sign, utc_now, verify
from tests.runtime.test_apigateway import EchoFunction
from tests.support.template import synth_template_json
from tests.support.tenant_paths import TENANT_ACME_PATHS
from tests.support.tenant_tags import ACCOUNT_ID_TAGS, HOSTILE_TENANT_TAGS

pytestmark = pytest.mark.shares_setup  # the IAM-enforcing systems its module fixtures start

REGION, ACCOUNT, API_ID, STAGE = "us-east-1", "000000000000", "a1b2c3", "prod"
Gateway = tuple[ApiGateway, EchoFunction, Identities]


def deployed_policies() -> dict[str, list[dict[str, Any]]]:
    """The roles' policies from the synthesized template, with its intrinsic functions resolved as
    CloudFormation would resolve them for this API."""
    template = synth_template_json()
    refs = {
        "AWS::Partition": "aws",
        "AWS::Region": REGION,
        "AWS::AccountId": ACCOUNT,
        **{name: API_ID for name, r in template["Resources"].items() if r["Type"] == "AWS::ApiGateway::RestApi"},
        **{name: STAGE for name, r in template["Resources"].items() if r["Type"] == "AWS::ApiGateway::Stage"},
    }

    def resolve(value: Any) -> Any:
        if isinstance(value, dict) and set(value) == {"Ref"}:
            return refs[value["Ref"]]
        if isinstance(value, dict) and set(value) == {"Fn::Join"}:
            separator, parts = value["Fn::Join"]
            return separator.join(str(resolve(part)) for part in parts)
        if isinstance(value, dict):
            return {key: resolve(inner) for key, inner in value.items()}
        if isinstance(value, list):
            return [resolve(inner) for inner in value]
        return value

    policies: dict[str, list[dict[str, Any]]] = {ADMIN: [], TENANT: []}
    kinds = {ADMIN_ROLE_ID: ADMIN, TENANT_ROLE_ID: TENANT}
    for resource in template["Resources"].values():
        if resource["Type"] != "AWS::IAM::Policy":
            continue
        for role in resource["Properties"]["Roles"]:
            for role_id, kind in kinds.items():
                if role_id in role["Ref"]:
                    policies[kind].append(resolve(resource["Properties"]["PolicyDocument"]))
    return policies


@pytest.fixture(scope="module")
def policies() -> dict[str, list[dict[str, Any]]]:
    return deployed_policies()


ROLE_ARNS = {ADMIN: f"arn:aws:iam::{ACCOUNT}:role/Admin", TENANT: f"arn:aws:iam::{ACCOUNT}:role/Tenant"}


@contextmanager
def running_gateway(
    policies: dict[str, list[dict[str, Any]]],
    responses: GatewayResponses | None = None,
    clock: Callable[[], datetime.datetime] | None = None,
    identities: Identities | None = None,
) -> Iterator[Gateway]:
    """A gateway whose every method is authorized with IAM, in front of an echo function; with
    `responses`, its refusals in the stack's gateway responses; with `clock`, checked at that time."""
    function = EchoFunction()
    identities = identities or Identities()
    authorizer = IamAuthorizer(identities, policies, ROLE_ARNS, REGION, ACCOUNT, API_ID, STAGE, clock or utc_now)
    routes = [Route("/{proxy+}", "ANY", function, "AWS_IAM")]  # type: ignore[arg-type]
    api = ApiGateway(routes, STAGE, "127.0.0.1", 0, authorizer, responses)
    api.start()
    try:
        yield api, function, identities
    finally:
        api.stop()


@pytest.fixture
def identities_file(tmp_path: Path) -> Path:
    return tmp_path / "identities.json"


@pytest.fixture
def gateway(policies: dict[str, list[dict[str, Any]]], identities_file: Path) -> Iterator[Gateway]:
    # The sessions as `make run` keeps them: in a file, which a session minted later joins.
    with running_gateway(policies, identities=Identities.load(identities_file)) as started:
        yield started


def test_the_stack_lets_a_tenant_session_reach_only_its_own_accounts_paths(policies: dict[str, Any]) -> None:
    def may(role: str, method: str, path: str, tenant: str | None = "acme") -> bool:
        tags = {TENANT_TAG_KEY: tenant} if tenant else {}
        arn = execute_api_arn(REGION, ACCOUNT, API_ID, STAGE, method, path)
        return allowed(policies[role], "execute-api:Invoke", arn, tags)

    for method, path, tenant_may in TENANT_ACME_PATHS:  # every type of its own account, no limit
        assert may(TENANT, method, path) is tenant_may, (method, path)
        assert may(ADMIN, method, path), (method, path)
    assert not may(TENANT, "GET", "/accounts/acme", tenant=None)  # a session without the tag
    assert not may(TENANT, "GET", "/accounts/acme/types/seats", tenant=None)
    assert may(ADMIN, "DELETE", "/accounts/globex/resources/r9")


def test_a_tag_value_is_matched_literally_never_as_a_wildcard() -> None:
    policy = [
        {"Statement": [{"Effect": "Allow", "Action": "execute-api:*", "Resource": "arn:x/${aws:PrincipalTag/t}/*"}]}
    ]
    assert allowed(policy, "execute-api:Invoke", "arn:x/a.b/c", {"t": "a.b"})
    assert not allowed(policy, "execute-api:Invoke", "arn:x/aXb/c", {"t": "a.b"})


def test_a_tag_with_a_slash_would_reach_another_tenant_so_no_session_is_minted_with_one(
    policies: dict[str, Any],
) -> None:
    """Why the tag values are constrained: the tenant policy puts the tag in the ARN as it is, so a
    session tagged `globex/resources/r1` would read globex's resource r1. The deployed trust policy
    refuses such a session (tests/infra); the local runtime never mints one."""
    arn = execute_api_arn(REGION, ACCOUNT, API_ID, STAGE, "GET", "/accounts/globex/resources/r1")
    assert allowed(policies[TENANT], "execute-api:Invoke", arn, {TENANT_TAG_KEY: "globex/resources/r1"})
    identities = Identities()
    for hostile in HOSTILE_TENANT_TAGS:
        with pytest.raises(ValueError, match="not an account id"):
            identities.tenant(hostile)
    for account_id in ACCOUNT_ID_TAGS:
        assert identities.tenant(account_id).tags == {TENANT_TAG_KEY: account_id}


def test_the_special_variables_stand_for_their_characters() -> None:
    """`${*}`, `${?}` and `${$}` match a literal `*`, `?` and `$` (IAM user guide, "IAM policy
    elements: Variables and tags", Special characters)."""
    assert string_like("*${*}*", "acme*")
    assert not string_like("*${*}*", "acme")
    assert string_like("${?}", "?")
    assert not string_like("${?}", "a")
    assert string_like("a${$}", "a$")
    assert not string_like("a${$}", "ab")


def test_a_deny_wins_and_unsupported_statements_are_refused_not_guessed() -> None:
    allow = {"Effect": "Allow", "Action": "execute-api:Invoke", "Resource": "*"}
    deny = {"Effect": "Deny", "Action": "execute-api:Invoke", "Resource": "arn:x/*"}
    assert not allowed([{"Statement": [allow, deny]}], "execute-api:Invoke", "arn:x/y", {})
    with pytest.raises(UnsupportedPolicy):
        allowed([{"Statement": [{**allow, "Condition": {"Bool": {"aws:SecureTransport": "true"}}}]}], "a", "b", {})


def test_an_admin_may_set_a_limit_and_the_function_sees_who_called(
    gateway: Gateway,
) -> None:
    api, function, identities = gateway
    reply = HttpApi(api.url, credentials=identities.admin.credentials()).request("PUT", "/accounts/acme", {"limit": 5})
    assert reply.status == 201
    caller = function.events[-1]["requestContext"]["identity"]
    assert caller["accessKey"] == identities.admin.access_key_id
    assert caller["userArn"] == f"arn:aws:sts::{ACCOUNT}:assumed-role/Admin/local-admin"


def serving(api: ApiGateway, local_dir: Path) -> None:
    """`.local/endpoints.json` as `make run` writes it once this gateway serves."""
    write_endpoints(local_dir, Endpoints(api.url, "http://127.0.0.1:1", "HybridCounter", REGION, str(local_dir)))


def assignments(out: str) -> dict[str, str]:
    """`python -m local.identities`'s shell assignments, as the shell reads them."""
    return dict(shlex.split(line)[0].split("=", 1) for line in out.splitlines() if "=" in line)


def test_a_tenant_minted_while_the_gateway_runs_is_accepted_at_once(
    gateway: Gateway, identities_file: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """`python -m local.identities globex` mints and saves a key for a new tenant; the running
    gateway accepts it without a restart, for globex's paths only."""
    api, function, _ = gateway
    serving(api, identities_file.parent)
    assert identities_main(["--local-dir", str(identities_file.parent), "globex"]) == 0
    printed = assignments(capsys.readouterr().out)
    assert printed["API"] == api.url
    key, secret = printed["GLOBEX"].split(":", 1)
    globex = HttpApi(api.url, credentials=Credentials(key, secret, printed["GLOBEX_TOKEN"]))
    assert globex.request("GET", "/accounts/globex").status == 201  # the echo function's answer
    assert globex.request("POST", "/accounts/globex/resources", {"name": "r"}).status == 201
    denied = globex.request("GET", "/accounts/acme")
    assert denied.status == 403, denied.body
    assert "is not authorized to perform: execute-api:Invoke" in json.dumps(denied.body)
    assert [event["path"] for event in function.events] == ["/accounts/globex", "/accounts/globex/resources"]
    assert mint_tenant("globex", identities_file).access_key_id == key  # minted once, then reused


def test_curl_signs_with_every_flag_a_sign_variable_holds(gateway: Gateway, identities_file: Path) -> None:
    """`curl $SIGN_GLOBEX $API/...` after `eval "$(python -m local.identities globex)"`: the
    session token's header comes with the key, so no caller can leave it out (403 without it)."""
    api, function, _ = gateway
    serving(api, identities_file.parent)
    script = (
        'eval "$(python -m local.identities globex)" && '
        "curl -sS -o /dev/null -w '%{http_code} ' $SIGN_GLOBEX -X POST $API/accounts/globex/resources -d '{}' && "
        "curl -sS -o /dev/null -w '%{http_code} ' $SIGN_ADMIN $API/accounts/acme && "
        'curl -sS -o /dev/null -w "%{http_code}" --aws-sigv4 $SIGV4 --user $GLOBEX $API/accounts/globex'
    )
    environment = {
        **os.environ,
        LOCAL_DIR_ENV: str(identities_file.parent),
        "PATH": f"{Path(sys.executable).parent}:{os.environ['PATH']}",
    }
    done = subprocess.run(["bash", "-c", script], env=environment, capture_output=True, text=True, timeout=60)
    assert done.stdout.split() == ["201", "201", "403"], done.stderr
    assert [event["path"] for event in function.events] == ["/accounts/globex/resources", "/accounts/acme"]


def test_without_a_running_make_run_the_identities_say_to_start_it(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.delenv(LOCAL_DIR_ENV, raising=False)
    monkeypatch.chdir(tmp_path)
    assert identities_main([]) == 1
    missing = capsys.readouterr()
    assert missing.out == ""
    assert "start the system with `make run` first" in missing.err

    with socket.socket() as closed:  # a port nothing listens on: a `make run` killed before it removed its file
        closed.bind(("127.0.0.1", 0))
        dead_url = f"http://127.0.0.1:{closed.getsockname()[1]}"
    write_endpoints(tmp_path / ".local", Endpoints(dead_url, dead_url, "HybridCounter", REGION, str(tmp_path)))
    assert identities_main([]) == 1
    stale = capsys.readouterr()
    assert stale.out == ""
    assert f"nothing answers at {dead_url}" in stale.err
    assert "start the system with `make run` first" in stale.err


def refused(reply: Any, function: EchoFunction, status: int, message: str) -> None:
    assert reply.status == status, reply.body
    assert message in json.dumps(reply.body)
    assert function.events == []  # never reached the function


def test_an_unsigned_request_is_refused_before_the_function(
    gateway: Gateway,
) -> None:
    api, function, _ = gateway
    refused(HttpApi(api.url).request("GET", "/accounts/acme"), function, 403, "Missing Authentication Token")


def test_a_request_signed_with_the_wrong_secret_is_refused(
    gateway: Gateway,
) -> None:
    api, function, identities = gateway
    forged = Credentials(identities.admin.access_key_id, "not-the-secret")
    reply = HttpApi(api.url, credentials=forged).request("PUT", "/accounts/acme", {"limit": 5})
    refused(reply, function, 403, "The request signature we calculated does not match")


def test_a_body_changed_after_signing_is_refused(gateway: Gateway) -> None:
    """The signature covers the payload: a limit changed on the way is caught."""
    api, function, identities = gateway
    url = f"{api.url}/accounts/acme"
    headers = sign(
        identities.admin.credentials(), REGION, "PUT", url, b'{"limit": 5}', {"Content-Type": "application/json"}
    )
    reply = HttpApi(api.url).request("PUT", "/accounts/acme", {"limit": 5000}, headers)
    refused(reply, function, 403, "The request signature we calculated does not match")


def enveloped_refusal(reply: Any, function: EchoFunction, code: str) -> None:
    """A 403 of API Gateway's, in the API's error envelope, before the function."""
    assert reply.status == 403, reply.body
    assert reply.body["error"]["code"] == code
    assert function.events == []


@pytest.mark.parametrize("claimed", ["UNSIGNED-PAYLOAD", hashlib.sha256(b'{"name": "benign"}').hexdigest()])
def test_the_signature_covers_the_body_received_whatever_hash_the_client_claims(
    policies: dict[str, Any], responses: GatewayResponses, claimed: str
) -> None:
    """execute-api hashes the body it received; X-Amz-Content-SHA256 is S3's header and proves
    nothing here (a signed benign body with another sent in its place is refused)."""
    with running_gateway(policies, responses) as (api, function, identities):
        url = f"{api.url}/accounts/acme/resources"
        headers = {"Content-Type": "application/json", "X-Amz-Content-SHA256": claimed}
        signed = sign(identities.admin.credentials(), REGION, "POST", url, b'{"name": "benign"}', headers)
        reply = HttpApi(api.url).request("POST", "/accounts/acme/resources", {"name": "evil"}, signed)
    enveloped_refusal(reply, function, "InvalidSignature")


def test_an_admins_signed_limit_replayed_with_another_limit_is_refused(
    policies: dict[str, Any], responses: GatewayResponses
) -> None:
    with running_gateway(policies, responses) as (api, function, identities):
        url, body = f"{api.url}/accounts/acme", b'{"limit": 1}'
        headers = {"Content-Type": "application/json", "X-Amz-Content-SHA256": hashlib.sha256(body).hexdigest()}
        signed = sign(identities.admin.credentials(), REGION, "PUT", url, body, headers)
        replayed = HttpApi(api.url).request("PUT", "/accounts/acme", {"limit": 1000000}, signed)
        enveloped_refusal(replayed, function, "InvalidSignature")
        assert HttpApi(api.url).request("PUT", "/accounts/acme", {"limit": 1}, signed).status == 201  # as signed


def test_an_unknown_access_key_is_refused(gateway: Gateway) -> None:
    api, function, _ = gateway
    stranger = Credentials("ASIANOBODY", "whatever")
    reply = HttpApi(api.url, credentials=stranger).request("GET", "/accounts/acme")
    refused(reply, function, 403, "The security token included in the request is invalid.")


def test_a_signature_older_than_five_minutes_is_refused(gateway: Gateway) -> None:
    api, function, identities = gateway
    then = datetime.datetime.now(datetime.UTC) - MAX_CLOCK_SKEW - datetime.timedelta(seconds=30)
    headers = sign(identities.admin.credentials(), REGION, "GET", f"{api.url}/accounts/acme", None, {}, at=then)
    refused(HttpApi(api.url).request("GET", "/accounts/acme", None, headers), function, 403, "Signature expired")


def test_a_session_is_its_key_secret_and_token_together(gateway: Gateway) -> None:
    """A session's keys (ASIA...) are valid only with its session token, as sts:AssumeRole's are."""
    api, function, identities = gateway
    admin = identities.admin.credentials()
    assert admin.token  # minted with a session token
    for token in (None, "not-the-token", identities.tenant("acme").session_token):
        reply = HttpApi(api.url, credentials=Credentials(admin.access_key, admin.secret_key, token)).request(
            "GET", "/accounts/acme"
        )
        refused(reply, function, 403, "The security token included in the request is invalid.")
    assert HttpApi(api.url, credentials=admin).request("GET", "/accounts/acme").status == 201


@pytest.mark.parametrize("after_expiry", [False, True], ids=["a second before its expiry", "at its expiry"])
def test_an_expired_session_is_refused_expired_token(
    policies: dict[str, Any], responses: GatewayResponses, after_expiry: bool
) -> None:
    minted_at = datetime.datetime(2026, 11, 20, 9, 0, tzinfo=datetime.UTC)
    identities = Identities(clock=lambda: minted_at)
    assert identities.admin.expiration == minted_at + SESSION_DURATION  # 12 h, AssumeRole's longest
    now = identities.admin.expiration - datetime.timedelta(seconds=0 if after_expiry else 1)
    with running_gateway(policies, responses, clock=lambda: now, identities=identities) as (api, function, _):
        headers = sign(identities.admin.credentials(), REGION, "GET", f"{api.url}/accounts/acme", None, {}, at=now)
        reply = HttpApi(api.url).request("GET", "/accounts/acme", None, headers)
    if not after_expiry:
        assert reply.status == 201
        return
    assert reply.status == 403
    assert reply.body["error"]["code"] == "ExpiredToken"
    assert reply.body["error"]["message"] == "The security token included in the request is expired"
    assert function.events == []


def test_saved_sessions_are_renewed_when_they_expire_within_the_hour(tmp_path: Path) -> None:
    path = tmp_path / "identities.json"
    minted_at = datetime.datetime(2026, 11, 20, 9, 0, tzinfo=datetime.UTC)
    first = Identities.load(path, clock=lambda: minted_at)
    admin, acme = first.admin, first.tenant("acme")
    later = Identities.load(
        path, clock=lambda: minted_at + SESSION_DURATION - RENEWED_WITHIN - datetime.timedelta(seconds=1)
    )
    assert (later.admin, later.tenant("acme")) == (admin, acme)  # still valid for over an hour: kept
    renewed_at = minted_at + SESSION_DURATION - RENEWED_WITHIN
    renewed = Identities.load(path, clock=lambda: renewed_at)
    assert renewed.admin.session_token != admin.session_token
    assert renewed.admin.expiration == renewed_at + SESSION_DURATION
    assert (renewed.tenant("acme").role, renewed.tenant("acme").tags) == (acme.role, acme.tags)
    assert Identities.load(path, clock=lambda: renewed_at).admin == renewed.admin  # saved


def test_a_file_of_sessions_without_tokens_is_minted_again(tmp_path: Path) -> None:
    path = tmp_path / "identities.json"
    path.write_text(
        json.dumps([{"access_key_id": "ASIALOCALX", "secret_access_key": "s", "role": "admin", "tags": {}}])
    )
    admin = Identities.load(path).admin
    assert admin.session_token
    assert admin.access_key_id != "ASIALOCALX"


def test_a_signature_dated_after_the_window_is_not_yet_current_as_aws_words_it(policies: dict[str, Any]) -> None:
    now = datetime.datetime(2026, 11, 20, 21, 10, 29, tzinfo=datetime.UTC)
    with running_gateway(policies, clock=lambda: now) as (api, function, identities):
        future = now + MAX_CLOCK_SKEW + datetime.timedelta(seconds=74)
        headers = sign(identities.admin.credentials(), REGION, "GET", f"{api.url}/accounts/acme", None, {}, at=future)
        reply = HttpApi(api.url).request("GET", "/accounts/acme", None, headers)
    refused(
        reply,
        function,
        403,
        "Signature not yet current: 20261120T211643Z is still later than 20261120T211529Z (20261120T211029Z + 5 min.)",
    )


def test_a_tenant_reaching_for_another_tenant_or_for_a_limit_is_denied(
    gateway: Gateway,
) -> None:
    api, function, identities = gateway
    acme = HttpApi(api.url, credentials=identities.tenant("acme").credentials())
    refused(acme.request("POST", "/accounts/globex/resources", {"name": "x"}), function, 403, "is not authorized")
    refused(acme.request("PUT", "/accounts/acme", {"limit": 1000}), function, 403, "is not authorized")
    refused(acme.request("PUT", "/accounts/acme/types/seats", {"limit": 1000}), function, 403, "is not authorized")
    refused(acme.request("DELETE", "/accounts/acme/types/seats"), function, 403, "is not authorized")
    refused(acme.request("GET", "/accounts/globex/types/seats"), function, 403, "is not authorized")
    denied = acme.request("GET", "/accounts/globex")
    assert set(denied.body) == {"Message"}  # API Gateway's ACCESS_DENIED body says "Message"
    assert acme.request("POST", "/accounts/acme/resources", {"name": "x"}).status == 201


@pytest.mark.parametrize(
    ("method", "path"),
    [
        ("GET", "/accounts/acme/../globex"),
        ("POST", "/accounts/acme/resources/../../globex/resources"),
        ("POST", "/accounts/acme/resources//..//..//globex/resources"),
        ("POST", "/accounts/acme/resources/%2e%2e/%2e%2e/globex/resources"),
        ("POST", "/accounts/acme/types/seats/resources/../../../../globex/types/seats/resources"),
        ("POST", "/accounts/acme/types/seats/resources/%2e%2e/%2e%2e/%2e%2e/%2e%2e/globex/resources"),
        ("POST", "/accounts/acme/types/..%2F..%2Fglobex/resources"),
        ("POST", "/accounts/acme/resources/%2E%2E/%2e%2E/globex/resources"),
        ("POST", "/accounts/acme%2F..%2Fglobex/resources"),
        ("POST", "/accounts/acme/resources/..%2F..%2Fglobex/resources"),
        ("GET", "//accounts//globex"),
        ("POST", "/accounts/acme/./resources"),
        ("POST", "//accounts//acme//resources"),
        ("POST", "/accounts/%61cme/resources"),
    ],
)
def test_a_tenant_reaches_its_own_account_only_however_the_path_is_spelled(
    gateway: Gateway, method: str, path: str
) -> None:
    """The signature covers the path with its dot segments removed (as botocore signs it); the
    policy is evaluated on the path the request is routed on, which is the path the function gets.
    Another tenant's account is never reached: refused, or routed to the caller's own account."""
    api, function, identities = gateway
    acme = HttpApi(api.url, credentials=identities.tenant("acme").credentials())
    reply = acme.request(method, path, {"name": "x"} if method == "POST" else None)
    if reply.status == 403:
        assert function.events == []
        return
    assert reply.status == 201, reply.body
    [event] = function.events
    segments = event["path"].split("/")
    assert segments[:3] == ["", "accounts", "acme"], event["path"]
    assert not {".", "..", ""} & set(segments[1:]), event["path"]
    assert "%2e" not in event["path"].lower(), event["path"]
    assert event["requestContext"]["path"] == f"/{STAGE}{event['path']}"


def test_verification_is_botocores_own_signature_computed_again() -> None:
    """A request signed by botocore verifies; the same request checked for another region does not."""
    credentials = Identities().admin.credentials()
    url = "http://127.0.0.1:3000/accounts/a%20b/resources?limit=2"
    now = datetime.datetime(2026, 11, 20, 21, 10, 29, tzinfo=datetime.UTC)
    headers = sign(credentials, REGION, "GET", url, None, {}, at=now)
    secrets = {credentials.access_key: credentials.secret_key}
    assert verify("GET", url, headers, b"", REGION, secrets.get, now).access_key_id == credentials.access_key  # type: ignore[union-attr]
    assert verify("GET", url, headers, b"", "eu-west-1", secrets.get, now).status == 403  # type: ignore[union-attr]


def test_a_policy_the_local_gateway_cannot_evaluate_is_a_500_not_a_guess() -> None:
    function = EchoFunction()
    identities = Identities()
    conditional = {"Effect": "Allow", "Action": "execute-api:Invoke", "Resource": "*", "Condition": {"Bool": {}}}
    authorizer = IamAuthorizer(
        identities, {ADMIN: [{"Statement": [conditional]}]}, ROLE_ARNS, REGION, ACCOUNT, API_ID, STAGE
    )
    api = ApiGateway([Route("/{proxy+}", "ANY", function, "AWS_IAM")], STAGE, "127.0.0.1", 0, authorizer)  # type: ignore[arg-type]
    api.start()
    try:
        reply = HttpApi(api.url, credentials=identities.admin.credentials()).request("GET", "/accounts/a")
    finally:
        api.stop()
    assert (reply.status, reply.body) == (500, {"message": "Internal server error"})
    assert function.events == []


# --- gateway responses: API Gateway's own answers in the API's error envelope ----------------------


@pytest.fixture(scope="module")
def responses() -> GatewayResponses:
    return GatewayResponses.from_template(synth_template_json())


@pytest.mark.parametrize(
    ("response_type", "status", "answered", "code"),
    [
        ("MISSING_AUTHENTICATION_TOKEN", 403, 403, "MissingAuthenticationToken"),
        ("INVALID_SIGNATURE", 403, 403, "InvalidSignature"),
        ("EXPIRED_TOKEN", 403, 403, "ExpiredToken"),
        ("ACCESS_DENIED", 403, 403, "AccessDenied"),
        ("THROTTLED", 429, 429, "Throttled"),
        ("REQUEST_TOO_LARGE", 413, 413, "PayloadTooLarge"),
        ("INTEGRATION_TIMEOUT", 504, 504, "IntegrationTimeout"),
        ("INTEGRATION_FAILURE", 500, 503, "ServiceUnavailable"),  # a throttled invocation
        ("INTEGRATION_FAILURE", 502, 503, "ServiceUnavailable"),  # a failed one
        ("WAF_FILTERED", 403, 403, "RequestRefused"),  # undeclared: DEFAULT_4XX
        ("API_CONFIGURATION_ERROR", 500, 500, "InternalError"),  # undeclared: DEFAULT_5XX
    ],
)
def test_every_answer_of_api_gateway_itself_is_in_the_apis_error_envelope(
    responses: GatewayResponses, response_type: str, status: int, answered: int, code: str
) -> None:
    message = 'a message with "quotes"'
    answer = responses.answer(response_type, status, message, "req-1", message_key="Message")
    assert answer.status == answered
    assert json.loads(answer.body) == {"error": {"code": code, "message": message, "requestId": "req-1"}}
    assert answer.headers["Content-Type"] == "application/json"
    assert ("Retry-After" in answer.headers) is (response_type in ("THROTTLED", "INTEGRATION_FAILURE"))


def test_without_declared_responses_api_gateways_defaults_are_answered() -> None:
    answer = GatewayResponses().answer("ACCESS_DENIED", 403, "no", "req-1", message_key="Message")
    assert (answer.status, json.loads(answer.body)) == (403, {"Message": "no"})
