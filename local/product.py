"""The hybrid counter, as the local tools run it: not a stand-in (docs/local-runtime.md says which
files of local/ are).

The stand-ins know what AWS knows: a template, the event shapes, the services' rules. What they are
told of this product comes from here and from its launcher (local/__main__.py, local/identities.py):
its CDK app and stack, the roles its callers assume, its functions' settings scaled to the
emulator's partition limits, its item families in the emulator's throttle reports, and its own
client (hybrid_counter_client) signed as one of those callers. `make run`, `make chaos`, the
benchmarks and the tests share it.
"""

from __future__ import annotations

import uuid
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from botocore.credentials import Credentials
from hybrid_counter_client import LimitsClient, RetryPolicy

from functions.core.admission import ShardingSettings
from functions.core.model import REQUESTS_PER_SECOND_PER_PART
from functions.shared.config import FunctionEnvironment
from infra.layout import EXCLUDED_PATTERNS, FUNCTIONS_PACKAGE, REPO_ROOT
from infra.outputs import DEFAULT_STACK_NAME
from local.capacity.limits import parse_factor
from local.deploy import CdkApp
from local.endpoints import Endpoints
from local.identities import ADMIN, ROLE_OUTPUTS, Identities
from local.runtime import LocalRuntime, RuntimeSettings

APP = CdkApp(
    root=REPO_ROOT,
    stack_name=DEFAULT_STACK_NAME,
    synth_script=(
        "import json, sys; from infra.synth import synthesize_stack_template; "
        "json.dump(synthesize_stack_template(json.loads(sys.argv[1])), sys.stdout)"
    ),
    # The CDK app, its settings and pinned versions, the infrastructure code, and the functions'
    # sources (the asset's hash is theirs).
    input_files=("app.py", "cdk.json", "requirements.txt", "package-lock.json"),
    input_folders=("infra", FUNCTIONS_PACKAGE),
    code_folder=FUNCTIONS_PACKAGE,
    excluded=EXCLUDED_PATTERNS,
    synth_cache=REPO_ROOT / ".local" / "synth",
)


# The libraries every function of the stack imports (functions/requirements.txt), imported once in
# the server the sandboxes are forked from instead of in each sandbox (local/functions.py
# `sandbox_context`): a sandbox then started in 0.32 s of CPU instead of 0.72 (the API function's,
# four at once). None of them reads at import a setting a function's environment or the local
# runtime gives: the X-Ray SDK reads LAMBDA_TASK_ROOT and AWS_XRAY_* then, Powertools
# AWS_EXECUTION_ENV, AWS_LAMBDA_INITIALIZATION_TYPE and POWERTOOLS_DEBUG
# (tests/runtime/test_function_pool.py holds the stack's environments to that).
SANDBOX_PRELOAD = (
    "boto3",
    "botocore.client",
    "pydantic",
    "aws_lambda_powertools",
    "aws_lambda_powertools.event_handler",
    "aws_lambda_powertools.utilities.batch",
    "aws_xray_sdk.core",
)
# What the modules above read from the environment as they are imported (names, or their prefix).
READ_AT_IMPORT = (
    "LAMBDA_TASK_ROOT",
    "AWS_XRAY_",
    "AWS_EXECUTION_ENV",
    "AWS_LAMBDA_INITIALIZATION_TYPE",
    "POWERTOOLS_DEBUG",
)


def runtime_settings(
    endpoint_url: str, *, app: CdkApp = APP, identities: Identities | None = None, **options: Any
) -> RuntimeSettings:
    """The local runtime's settings for this product's stack: its app, the admin and tenant sessions
    that call it (new ones in memory unless given) and the stack outputs naming their roles, with
    `options` (any other RuntimeSettings field). Its sandboxes are forked with the functions'
    libraries imported (SANDBOX_PRELOAD) unless `sandbox_preload` says otherwise."""
    return RuntimeSettings(
        endpoint_url=endpoint_url,
        app=app,
        identities=identities or Identities(),
        caller_roles=ROLE_OUTPUTS,
        **{"sandbox_preload": SANDBOX_PRELOAD, **options},
    )


class SignedAs:
    """One of the local runtime's sessions (local/identities.py) as the product client's `session`:
    its `region_name` and `get_credentials()` are all LimitsClient asks of one
    (clients/python/README.md)."""

    def __init__(self, credentials: Credentials, region: str) -> None:
        self._credentials = credentials
        self.region_name = region

    def get_credentials(self) -> Credentials:
        return self._credentials


def api_client(
    api_url: str, credentials: Credentials, region: str, *, timeout: float = 30, retry: RetryPolicy | None = None
) -> LimitsClient:
    """The product's client of the API at `api_url`, signed with `credentials` (a local session's or
    a deployed stack's caller's). `retry`: the client's own policy unless given; chaos and the
    benchmarks pass `SINGLE_ATTEMPT` to see every answer, and retry as they mean to."""
    return LimitsClient(api_url, SignedAs(credentials, region), region=region, timeout=timeout, retry=retry)


# One request per call: the error raised is that request's answer (its `status` and `code`, None
# when no answer came).
SINGLE_ATTEMPT = RetryPolicy(max_attempts=1)


def new_account(client: LimitsClient, prefix: str = "it", limit: int = 10) -> str:
    """A fresh account, so that tests and runs never see each other's resources."""
    account_id = f"{prefix}-{uuid.uuid4().hex[:12]}"
    client.put_account(account_id, limit=limit)
    return account_id


def serving_endpoints(runtime: LocalRuntime, emulator_url: str) -> Endpoints:
    """What `.local/endpoints.json` says of a runtime that serves (local/endpoints.py): `make run`
    writes it, and the integration tier for the README's commands."""
    return Endpoints(
        api_url=runtime.api_url,
        emulator_url=emulator_url,
        stack_name=runtime.settings.app.stack_name,
        region=runtime.settings.region,
        log_directory=str(Path(runtime.settings.log_dir).resolve()),
    )


def admin_client(runtime: LocalRuntime, *, timeout: float = 30, retry: RetryPolicy | None = None) -> LimitsClient:
    """The product's client of the running local API, signed as its admin session."""
    admin = runtime.settings.identities.session(ADMIN, {})
    return api_client(runtime.api_url, admin.credentials(), runtime.settings.region, timeout=timeout, retry=retry)


def scaled_environment(partition_limits: str | None) -> dict[str, str]:
    """The functions' settings that depend on a partition's capacity, scaled with the emulator's
    partition limits (for `RuntimeSettings.environment`): an admission shard doubles its account's
    shards at a quarter of what a partition takes (functions/core/admission.py), so at 1/2000 a
    busy account grows at 0.125 writes a second on a shard, as it would at 250 on AWS; and a
    tenant's rate window takes one part per 1,000 requests a second of its rate
    (functions/core/rate_limits.py), so at 1/2000 one per 0.5. The leases on a window part are
    counted per execution environment, not per request, and a scaled run serves its trickle with as
    many sandboxes as a full one serves thousands of requests with: without the scaled part size
    its one window item would take 10 sandboxes' leases against the 0.5 write units a second a
    scaled item takes."""
    if partition_limits is None:
        return {}
    factor = parse_factor(partition_limits)
    grow_at = ShardingSettings().grow_at * factor
    return {
        FunctionEnvironment.variable("shard_grow_at"): f"{grow_at:g}",
        FunctionEnvironment.variable("rate_part_requests"): f"{REQUESTS_PER_SECOND_PER_PART * factor:g}",
    }


def refusal_environment(grace_seconds: int | None) -> dict[str, str]:
    """How long after its minute a minute's refused creates are announced (functions/core/refusals.py
    DEFAULT_GRACE, 90 s, unless given): the integration tests wait a second, not a minute and a half."""
    return {} if grace_seconds is None else {FunctionEnvironment.variable("refusal_grace"): str(grace_seconds)}


def by_family(refusals: Mapping[str, int]) -> dict[str, int]:
    """The emulator's partition-limit refusals (local/partition_throttling.py `read_throttles`)
    added up per kind of place: "write SHARD" for every admission shard item, "read ACCOUNT" for
    every account item, "write index <name>" for every key of an index, and so on (the sort key
    names an item's family; a resource's is its id, so it counts as "resource")."""
    families: dict[str, int] = {}
    for place, count in refusals.items():
        kind, _, rest = place.partition(" ")
        if rest.startswith("index"):
            family = f"{kind} index {rest.split(' index ')[1].split(' / ')[0]}"
        else:
            sort = rest.rsplit(" / ", 1)[-1]
            family = f"{kind} {sort if sort.isupper() and '#' not in sort else 'resource'}"
        families[family] = families.get(family, 0) + count
    return dict(sorted(families.items(), key=lambda pair: -pair[1]))
