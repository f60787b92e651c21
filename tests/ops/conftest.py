"""Fixtures of the operator CLI's tests: a backend on moto's server (the CLI also reads queues,
functions and stacks there), the handler tier's harness over it, queues and a stack of outputs in
the emulator, so commands run both over resolved names and through `python -m ops`."""

from __future__ import annotations

import io
import json
import uuid
import zipfile
from dataclasses import dataclass
from typing import Any

import pytest

from functions.shared.clock import Clock
from functions.shared.config import FunctionEnvironment
from infra.outputs import OUTPUT_DLQ1_URL, OUTPUT_DLQ2_URL, OUTPUT_SWEEPER_FUNCTION, OUTPUT_TABLE_NAME
from ops.__main__ import main
from ops.stack import Connection
from tests.conftest import Backend, fresh_backend
from tests.handler.conftest import Harness

# The sweeper's settings as the test stack's function carries them: everything counts as old.
SWEEPER_ENVIRONMENT = {
    FunctionEnvironment.variable("pending_older_than"): "0",
    FunctionEnvironment.variable("quiet"): "0",
    FunctionEnvironment.variable("lookback"): "3600",
}


@pytest.fixture
def moto_backend(emulator_url: str) -> Backend:
    """This test's table, stream and wiring, on the session's moto server."""
    return fresh_backend(emulator_url)


@pytest.fixture
def cli_harness(moto_backend: Backend) -> Harness:
    """The handlers over the table the CLI is pointed at: what a test makes the state it reads with."""
    return Harness(moto_backend)


@pytest.fixture
def connection(emulator_url: str) -> Connection:
    return Connection(emulator_url, "us-east-1")


@dataclass
class Queues:
    sqs: Any
    dlq1: str
    dlq2: str

    def send(self, queue_url: str, *bodies: str) -> list[str]:
        return [self.sqs.send_message(QueueUrl=queue_url, MessageBody=body)["MessageId"] for body in bodies]

    def drain(self, queue_url: str) -> list[dict[str, Any]]:
        """Receive (and delete) every message of the queue."""
        messages: list[dict[str, Any]] = []
        while True:
            batch = self.sqs.receive_message(
                QueueUrl=queue_url, MaxNumberOfMessages=10, VisibilityTimeout=30, AttributeNames=["All"]
            ).get("Messages", [])
            if not batch:
                return messages
            for message in batch:
                self.sqs.delete_message(QueueUrl=queue_url, ReceiptHandle=message["ReceiptHandle"])
            messages.extend(batch)

    def visible(self, queue_url: str) -> int:
        attributes = self.sqs.get_queue_attributes(QueueUrl=queue_url, AttributeNames=["ApproximateNumberOfMessages"])
        return int(attributes["Attributes"]["ApproximateNumberOfMessages"])


@pytest.fixture
def queues(moto_backend: Backend, connection: Connection) -> Queues:
    """DLQ 1 and DLQ 2 of this test (created after moto_backend reset the emulator)."""
    sqs = connection.client("sqs")
    suffix = uuid.uuid4().hex[:8]
    return Queues(
        sqs,
        sqs.create_queue(QueueName=f"dlq1-{suffix}")["QueueUrl"],
        sqs.create_queue(QueueName=f"dlq2-{suffix}")["QueueUrl"],
    )


def create_sweeper_function(connection: Connection, environment: dict[str, str]) -> str:
    """A function carrying the sweeper's settings (moto stores it; nothing can run it)."""
    role = connection.client("iam").create_role(
        RoleName=f"sweeper-{uuid.uuid4().hex[:8]}",
        AssumeRolePolicyDocument=json.dumps(
            {
                "Version": "2012-10-17",
                "Statement": [
                    {"Effect": "Allow", "Principal": {"Service": "lambda.amazonaws.com"}, "Action": "sts:AssumeRole"}
                ],
            }
        ),
    )["Role"]["Arn"]
    package = io.BytesIO()
    with zipfile.ZipFile(package, "w") as archive:
        archive.writestr("index.py", "def handler(event, context):\n    return {}\n")
    name = f"sweeper-{uuid.uuid4().hex[:8]}"
    connection.client("lambda").create_function(
        FunctionName=name,
        Runtime="python3.12",
        Role=role,
        Handler="index.handler",
        Code={"ZipFile": package.getvalue()},
        Environment={"Variables": environment},
    )
    return name


def create_output_stack(connection: Connection, outputs: dict[str, str]) -> str:
    """A CloudFormation stack that only has outputs (the table and queues are the test's own)."""
    name = f"ops-{uuid.uuid4().hex[:8]}"
    template = {
        "Resources": {"Nothing": {"Type": "AWS::CloudFormation::WaitConditionHandle"}},
        "Outputs": {key: {"Value": value} for key, value in outputs.items()},
    }
    cloudformation = connection.client("cloudformation")
    cloudformation.create_stack(StackName=name, TemplateBody=json.dumps(template))
    cloudformation.get_waiter("stack_create_complete").wait(StackName=name, WaiterConfig={"Delay": 1})
    return name


@pytest.fixture
def stack(moto_backend: Backend, queues: Queues, connection: Connection) -> str:
    """A stack whose outputs name this test's table, queues and a sweeper function."""
    return create_output_stack(
        connection,
        {
            OUTPUT_TABLE_NAME: moto_backend.table,
            OUTPUT_DLQ1_URL: queues.dlq1,
            OUTPUT_DLQ2_URL: queues.dlq2,
            OUTPUT_SWEEPER_FUNCTION: create_sweeper_function(connection, SWEEPER_ENVIRONMENT),
        },
    )


@dataclass
class CliResult:
    code: int
    out: str
    err: str

    def json(self) -> Any:
        return json.loads(self.out)


class Cli:
    """`python -m ops` against the emulator and the test stack, in this process, on the clock of
    the test's handlers."""

    def __init__(self, emulator_url: str, stack_name: str, clock: Clock, capsys: pytest.CaptureFixture[str]) -> None:
        self._options = ["--endpoint-url", emulator_url, "--stack-name", stack_name]
        self._clock = clock
        self._capsys = capsys

    def __call__(self, *arguments: str) -> CliResult:
        self._capsys.readouterr()
        code = main([*self._options, *arguments], self._clock)
        captured = self._capsys.readouterr()
        return CliResult(code, captured.out, captured.err)


@pytest.fixture
def cli(emulator_url: str, stack: str, moto_backend: Backend, capsys: pytest.CaptureFixture[str]) -> Cli:
    return Cli(emulator_url, stack, moto_backend.clock, capsys)
