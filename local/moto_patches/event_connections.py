"""CloudFormation deploys EventBridge connections and API destinations, as it does on AWS.

Upstream has the Events API's `CreateConnection` and `CreateApiDestination`, but no CloudFormation
model of `AWS::Events::Connection` or `AWS::Events::ApiDestination`: a template with them fails to
deploy ("Fn::GetAtt references undefined resource"). Here both are created through that API. A
connection's auth parameters may hold dynamic references to Secrets Manager
(`{{resolve:secretsmanager:<arn>:SecretString:<json key>::}}`), which CloudFormation resolves when
it creates the resource ("Get values stored in other services using dynamic references",
https://docs.aws.amazon.com/AWSCloudFormation/latest/UserGuide/dynamic-references.html); they are
resolved from the emulator's Secrets Manager the same way.

`Ref` is the resource's name, `Fn::GetAtt ... Arn` its ARN (the resources' CloudFormation
reference pages, "Return values").
"""

from __future__ import annotations

import json
import re
import sys
from typing import Any

# `{{resolve:secretsmanager:<secret ARN>:<SecretString:json key:stage:version>}}`
_DYNAMIC_REFERENCE = re.compile(
    r"\{\{resolve:secretsmanager:(arn:[^:]+:secretsmanager:[^:]+:[^:]+:secret:[^:]+)(.*?)\}\}"
)


def resolve_secrets(value: Any, account_id: str, region: str) -> Any:
    """`value` with every Secrets Manager dynamic reference in its strings replaced by the secret."""
    from moto.secretsmanager.models import secretsmanager_backends

    if isinstance(value, dict):
        return {key: resolve_secrets(item, account_id, region) for key, item in value.items()}
    if isinstance(value, list):
        return [resolve_secrets(item, account_id, region) for item in value]
    if not isinstance(value, str):
        return value

    def secret(match: re.Match[str]) -> str:
        arn, rest = match.group(1), match.group(2).split(":")
        # rest: "", "SecretString", json key, version stage, version id
        found = secretsmanager_backends[account_id][region].get_secret_value(arn, "", "")  # its current version
        text = str(found["SecretString"])  # the answer GetSecretValue gives
        json_key = rest[2] if len(rest) > 2 else ""
        return str(json.loads(text)[json_key]) if json_key else text

    return _DYNAMIC_REFERENCE.sub(secret, value)


def apply() -> None:
    from moto.core.common_models import CloudFormationModel
    from moto.events.models import events_backends

    class EventsResource:
        """What both share; each is a direct subclass of CloudFormationModel, the only ones moto finds."""

        def __init__(self, name: str, arn: str) -> None:
            self.name, self.arn = name, arn

        @property
        def physical_resource_id(self) -> str:
            return self.name

        @classmethod
        def has_cfn_attr(cls, attr: str) -> bool:
            return attr == "Arn"

        def get_cfn_attribute(self, attribute_name: str) -> str:
            return self.arn

        @staticmethod
        def cloudformation_name_type() -> str:
            return "Name"

    class ConnectionResource(EventsResource, CloudFormationModel):
        @staticmethod
        def cloudformation_type() -> str:
            return "AWS::Events::Connection"

        @classmethod
        def create_from_cloudformation_json(
            cls, resource_name: str, cloudformation_json: Any, account_id: str, region_name: str, **_: Any
        ) -> ConnectionResource:
            properties = cloudformation_json["Properties"]
            connection = events_backends[account_id][region_name].create_connection(
                resource_name,
                properties.get("Description", ""),
                properties["AuthorizationType"],
                resolve_secrets(properties.get("AuthParameters", {}), account_id, region_name),
            )
            return cls(resource_name, connection.arn)

    class ApiDestinationResource(EventsResource, CloudFormationModel):
        @staticmethod
        def cloudformation_type() -> str:
            return "AWS::Events::ApiDestination"

        @classmethod
        def create_from_cloudformation_json(
            cls, resource_name: str, cloudformation_json: Any, account_id: str, region_name: str, **_: Any
        ) -> ApiDestinationResource:
            properties = cloudformation_json["Properties"]
            created = events_backends[account_id][region_name].create_api_destination(
                resource_name,
                properties.get("Description", ""),
                properties["ConnectionArn"],
                properties["InvocationEndpoint"],
                properties.get("InvocationRateLimitPerSecond", 300),
                properties["HttpMethod"],
            )
            return cls(resource_name, created["ApiDestinationArn"])

    # CloudFormation lists its models (CloudFormationModel's subclasses) once, when it first maps a
    # template's types: defined before that, these are among them. Its parsing is not imported
    # here: that loads every service's models (EC2's region tables among them), 1.5 s of CPU at
    # an emulator's start, which an emulator that deploys no stack never needs.
    parsing = sys.modules.get("moto.cloudformation.parsing")
    if parsing is not None:
        for cached in (parsing.get_model_list, parsing.get_model_map, parsing.get_name_type_map):
            cached.cache_clear()
