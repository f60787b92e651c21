"""Execution environments' stores that wait as long as it takes, for the tests that race many
creates at once on one emulator (a starved machine queues them longer than the functions' timeouts)."""

from __future__ import annotations

import boto3
from botocore.config import Config

from functions.adapters.api_store import DynamoApiStore
from functions.adapters.dynamo_table import DynamoTable
from tests.handler.conftest import Harness
from tests.support.sessions import new_session


def patient_store(harness: Harness, session: boto3.Session) -> DynamoApiStore:
    """The API's store in one execution environment, with a client that waits as long as it takes:
    the emulator applies one request at a time, so a hundred at once queue there for longer than the
    functions' 5 s read timeout on a busy machine, and these tests are about admission, not about
    timeouts. DynamoDB Local also answers a write that waited too long for its lock
    `InternalServerError` ("This request will succeed in actual DynamoDB API"), which the SDK
    retries. One client per create, as each Lambda execution environment has its own: the SDK's
    standard retry mode gives each client a retry quota (500 tokens, 5 a retry, refilled by
    successes), and 200 creates sharing one client used it up in a loaded run, after which the SDK
    stopped retrying and 94 creates failed on their first lock timeout."""
    config = Config(retries={"mode": "standard", "total_max_attempts": 10}, read_timeout=300)
    client = session.client("dynamodb", endpoint_url=harness.backend.endpoint_url, config=config)
    return DynamoApiStore(DynamoTable(client, harness.backend.table))


def patient_stores(harness: Harness, count: int) -> list[DynamoApiStore]:
    """`count` execution environments' stores, built before the threads start (a boto3 session
    is not thread-safe), from one session (which loads the service model once)."""
    session = new_session()
    return [patient_store(harness, session) for _ in range(count)]
