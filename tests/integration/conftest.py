"""The integration tier talks HTTP to an API base URL and reads counters only through the API.

Without API_URL it starts the whole system locally: the embedded emulator, the synthesized
template deployed into it and the local Lambda service, with two fault rules that only these
tests trigger (poison accounts). With API_URL=https://.../prod/ (a `cdklocal deploy` on
LocalStack, or a real stack), the same tests run unchanged against it; those that need injected
faults skip, saying so.
"""

from __future__ import annotations

import os
import shutil
import tempfile
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import boto3
import pytest
from hybrid_counter_client import LimitsClient

from functions.adapters import keys
from functions.core.model import Quota
from local.product import SINGLE_ATTEMPT, api_client
from tests.support.raw_api import RawApi

# Accounts whose transactions the local runtime answers with TransactionConflict.
POISON_IN_CONSUMER = "poison-stream"  # fails in the stream consumer only: redriven from DLQ 1
POISON_EVERYWHERE = "poison-always"  # fails in the redrive too: ends in DLQ 2

# Accounts whose first create's put, or first delete's decrement, is held back until the test
# releases it (tests/integration/test_late_invocations.py): it runs after its caller gave up and
# retried. At most LATE_SECONDS, within the API function's 10 s timeout.
LATE_CREATE = "late-create"
LATE_DELETE = "late-delete"
LATE_SECONDS = 8
_ONCE = tempfile.mkdtemp(prefix="hybrid-counter-late-")
RELEASE_LATE_CREATE = f"{_ONCE}/release-create"
RELEASE_LATE_DELETE = f"{_ONCE}/release-delete"

FAULTS = [
    {
        "functions": ["api"],
        "operation": "PutItem",
        "contains": keys.account_pk(Quota(LATE_CREATE)),
        "delay_seconds": LATE_SECONDS,
        "once_file": f"{_ONCE}/create",
        "release_file": RELEASE_LATE_CREATE,
    },
    {
        "functions": ["api"],
        "operation": "UpdateItem",
        "contains": [keys.account_pk(Quota(LATE_DELETE)), "ADD best_effort :best_effort"],
        "delay_seconds": LATE_SECONDS,
        "once_file": f"{_ONCE}/delete",
        "release_file": RELEASE_LATE_DELETE,
    },
    {
        "functions": ["stream_consumer"],
        "operation": "TransactWriteItems",
        "contains": keys.account_pk(Quota(POISON_IN_CONSUMER)),
        "answer": "TransactionConflict",
    },
    {
        "functions": [],
        "operation": "TransactWriteItems",
        "contains": keys.account_pk(Quota(POISON_EVERYWHERE)),
        "answer": "TransactionConflict",
    },
]


REFUSAL_GRACE_SECONDS = 1
SWEEP_PERIOD_SECONDS = 15


@dataclass
class RunningSystem:
    """`client`: the product's client (hybrid_counter_client), signed as the admin, one request per
    call so that every answer is the test's to judge; what the tests call the API with. `api`: the
    same API over raw HTTP (tests/support/raw_api.py says when a test needs it)."""

    api: RawApi
    client: LimitsClient
    runtime: object | None  # the LocalRuntime when running locally; None against a deployment
    # Locally, the folder `make run` would keep as .local/: its endpoints.json and the callers'
    # identities.json, which the runtime reads sessions minted later from (tests/integration/test_readme.py).
    local_dir: Path | None = None


# Package scope: the local system stops when the integration tests are done, not at the end of
# the session, so its pollers never run on into other tiers (the unit tier blocks the network).
@pytest.fixture(scope="package")
def running_system() -> Iterator[RunningSystem]:
    api_url = os.environ.get("API_URL")
    if api_url:
        # A deployed stack: signed with the caller's own AWS credentials, which must allow
        # execute-api:Invoke (assume the stack's AdminRoleArn output for that).
        session = boto3.Session()
        credentials, region = session.get_credentials(), session.region_name
        yield RunningSystem(
            api=RawApi(api_url, credentials=credentials, region=region),
            client=LimitsClient(api_url, session, retry=SINGLE_ATTEMPT),
            runtime=None,
        )
        return

    from local.emulator import EmulatorProcess
    from local.endpoints import IDENTITIES_FILE_NAME, write_endpoints
    from local.identities import ADMIN, Identities
    from local.product import refusal_environment, runtime_settings, serving_endpoints
    from local.runtime import LocalRuntime

    local_dir = Path(tempfile.mkdtemp(prefix="hybrid-counter-local-"))
    with EmulatorProcess() as emulator:
        runtime = LocalRuntime(
            runtime_settings(
                emulator.url,
                identities=Identities.load(local_dir / IDENTITIES_FILE_NAME),  # as `make run` keeps them
                port=0,
                faults=FAULTS,
                sqs_retry_visibility_seconds=1,  # DLQ 1 retries in a second, not in 6 minutes
                retry_backoff_seconds=0.05,
                # The sweeper every 15 seconds, not every 5 minutes: only test_the_scheduled_sweeper_runs
                # needs it to run (nothing here is pending for its 5 minutes), and each run reads every
                # account written in the last minute and queries the activity index's 128 buckets, a
                # cost that grows with the tier's data (every second, it took a sandbox and the emulator
                # about 7% of a core while idle; every 5 seconds, about 12% of four of the tier's files'
                # CPU, 2026-11-27).
                schedule_period_seconds=SWEEP_PERIOD_SECONDS,
                # A minute's refused creates announced a second after it, not a minute and a half.
                environment=refusal_environment(REFUSAL_GRACE_SECONDS),
            )
        )
        runtime.deploy_and_start()
        write_endpoints(local_dir, serving_endpoints(runtime, emulator.url))
        try:
            admin = runtime.settings.identities.session(ADMIN, {}).credentials()
            region = runtime.settings.region
            yield RunningSystem(
                api=RawApi(runtime.api_url, credentials=admin, region=region),
                client=api_client(runtime.api_url, admin, region, retry=SINGLE_ATTEMPT),
                runtime=runtime,
                local_dir=local_dir,
            )
        finally:
            runtime.stop()
            shutil.rmtree(local_dir, ignore_errors=True)


@pytest.fixture
def local_runtime(running_system: RunningSystem) -> object:
    if running_system.runtime is None:
        pytest.skip("needs faults injected by the local runtime; API_URL points at a deployment")
    return running_system.runtime


@pytest.fixture
def iam_enforced() -> None:
    """For tests of IAM's answers: skipped against an endpoint whose API Gateway does not enforce IAM."""
    if os.environ.get("API_ENFORCES_IAM", "true").lower() == "false":
        pytest.skip("this endpoint does not enforce IAM on API Gateway (LocalStack's community edition)")
