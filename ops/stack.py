"""Where the operator CLI points: boto3 clients for an endpoint, and the stack's outputs.

The same code talks to AWS (default credentials and region) and to an emulator (`--endpoint-url`,
or AWS_ENDPOINT_URL): the local runtime's moto server, or LocalStack. The table, the queues and
the sweeper function are found from the CloudFormation stack's outputs, whose keys are the
names in infra/outputs.py.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from functools import cached_property
from typing import Any

import boto3
import botocore.loaders
import botocore.session
from botocore.config import Config
from botocore.exceptions import ClientError

from infra.outputs import (
    OUTPUT_DLQ1_URL,
    OUTPUT_DLQ2_URL,
    OUTPUT_EVENT_BUS_NAME,
    OUTPUT_EVENTS_DLQ_URL,
    OUTPUT_EVENTS_LOG_GROUP,
    OUTPUT_REFUSAL_AGGREGATOR_FUNCTION,
    OUTPUT_REFUSALS_DLQ_URL,
    OUTPUT_SWEEPER_FUNCTION,
    OUTPUT_TABLE_NAME,
)

# Exit codes of `python -m ops` (argparse itself exits 2 for bad usage).
EXIT_OK = 0
EXIT_ERROR = 1
EXIT_DRIFT = 5  # an audit found counters that disagree with the items (ops audit)
EXIT_TRY_LATER = 3  # nothing is wrong, but the work could not be done now: run it again later
EXIT_NOT_FOUND = 4

# An emulator accepts any credentials; these are used only when none are configured.
EMULATOR_CREDENTIALS = {"aws_access_key_id": "local", "aws_secret_access_key": "local"}
EMULATOR_DEFAULT_REGION = "us-east-1"

_CLIENT_CONFIG = Config(retries={"mode": "standard", "total_max_attempts": 3}, connect_timeout=5, read_timeout=30)


class OpsError(Exception):
    """An expected failure: printed as one line, without a traceback, with its exit code."""

    exit_code = EXIT_ERROR


class StackNotFound(OpsError):
    pass


class MissingOutput(OpsError):
    pass


class AccountNotInTable(OpsError):
    """The account has no item in the stack's table."""

    exit_code = EXIT_NOT_FOUND


class FunctionFailed(OpsError):
    """An invoked function answered with an error."""


class TryLater(OpsError):
    """Nothing is wrong, but the work cannot be done now."""

    exit_code = EXIT_TRY_LATER


# AWS's service models, parsed once per process: a boto3 session of its own loads and parses every
# model it uses again (the CloudFormation, DynamoDB, SQS and Lambda models: about a tenth of a second
# of CPU per session), and a process that runs several commands (`main()` called in turn, as the
# tests call it) makes a session per command.
_LOADER = botocore.loaders.create_loader()


def new_session(**options: Any) -> boto3.Session:
    """A boto3 session of its own (its credentials, region and event hooks) that reads the service
    models through the process's one loader. `options`: boto3.Session's."""
    core = botocore.session.get_session()
    core.register_component("data_loader", _LOADER)
    paths = list(_LOADER.search_paths)
    session = boto3.Session(botocore_session=core, **options)
    # boto3 adds its own data path to the loader of every session it wraps: once is enough.
    if len(_LOADER.search_paths) > len(paths) and _LOADER.search_paths[-1] in paths:
        del _LOADER.search_paths[len(paths) :]
    return session


class Connection:
    """One boto3 session for every client of a run, pointed at AWS or at an emulator."""

    def __init__(self, endpoint_url: str | None = None, region: str | None = None) -> None:
        self.endpoint_url = endpoint_url or None
        self._region = region

    @cached_property
    def session(self) -> boto3.Session:
        session = new_session(region_name=self._region)
        if self.endpoint_url is None:
            if session.region_name is None:
                raise OpsError("no AWS region configured: pass --region, or set AWS_REGION or AWS_DEFAULT_REGION")
            return session
        region = session.region_name or EMULATOR_DEFAULT_REGION
        if session.get_credentials() is None:
            return new_session(region_name=region, **EMULATOR_CREDENTIALS)
        return new_session(region_name=region)

    @property
    def region(self) -> str:
        return str(self.session.region_name)

    def client(self, service: str, config: Config | None = None) -> Any:
        return self.session.client(
            service, endpoint_url=self.endpoint_url, config=_CLIENT_CONFIG.merge(config) if config else _CLIENT_CONFIG
        )

    def describe(self) -> str:
        return f"{self.endpoint_url} ({self.region})" if self.endpoint_url else f"AWS {self.region}"


@dataclass(frozen=True)
class StackOutputs:
    stack_name: str
    values: Mapping[str, str]

    @classmethod
    def resolve(cls, connection: Connection, stack_name: str) -> StackOutputs:
        try:
            stack = connection.client("cloudformation").describe_stacks(StackName=stack_name)["Stacks"][0]
        except ClientError as error:
            # CloudFormation has no error code of its own for a missing stack.
            if error.response.get("Error", {}).get("Code") == "ValidationError" and "does not exist" in str(error):
                hint = (
                    ""
                    if connection.endpoint_url
                    else "; against `make run`, start it first (ops reads .local/endpoints.json)"
                )
                raise StackNotFound(
                    f"stack {stack_name} not found in {connection.describe()}: deploy it, "
                    f"or name another with --stack-name{hint}"
                ) from error
            raise
        outputs = {output["OutputKey"]: output["OutputValue"] for output in stack.get("Outputs", [])}
        return cls(stack_name, outputs)

    def require(self, key: str) -> str:
        value = self.values.get(key)
        if not value:
            raise MissingOutput(
                f"stack {self.stack_name} has no output {key} (deployed from an older version? run cdk deploy)"
            )
        return value

    @property
    def table_name(self) -> str:
        return self.require(OUTPUT_TABLE_NAME)

    @property
    def dlq1_url(self) -> str:
        return self.require(OUTPUT_DLQ1_URL)

    @property
    def dlq2_url(self) -> str:
        return self.require(OUTPUT_DLQ2_URL)

    @property
    def sweeper_function(self) -> str:
        return self.require(OUTPUT_SWEEPER_FUNCTION)

    @property
    def event_bus_name(self) -> str:
        return self.require(OUTPUT_EVENT_BUS_NAME)

    @property
    def events_dlq_url(self) -> str:
        return self.require(OUTPUT_EVENTS_DLQ_URL)

    @property
    def events_log_group(self) -> str:
        return self.require(OUTPUT_EVENTS_LOG_GROUP)

    @property
    def refusals_dlq_url(self) -> str:
        return self.require(OUTPUT_REFUSALS_DLQ_URL)

    @property
    def refusal_aggregator_function(self) -> str:
        return self.require(OUTPUT_REFUSAL_AGGREGATOR_FUNCTION)


def function_environment(lambda_client: Any, function_name: str) -> dict[str, str]:
    """The environment variables the deployed function runs with."""
    try:
        configuration = lambda_client.get_function_configuration(FunctionName=function_name)
    except ClientError as error:
        if error.response.get("Error", {}).get("Code") == "ResourceNotFoundException":
            raise OpsError(f"function {function_name} not found: is the stack fully deployed?") from error
        raise
    return dict((configuration.get("Environment") or {}).get("Variables", {}))
