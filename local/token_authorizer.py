"""API Gateway's Lambda TOKEN authorizer, locally (`-c authorizer=jwt`), as the API Gateway developer
guide describes it ("Use API Gateway Lambda authorizers", "Input to", "Output from an API Gateway
Lambda authorizer", "Gateway response types"):

* no token in the identity source header: 401 `UNAUTHORIZED`, the authorizer never runs;
* the authorizer raises the error "Unauthorized": 401 `UNAUTHORIZED`; any other error or an answer
  without a policy: 500 (`AUTHORIZER_FAILURE` / `AUTHORIZER_CONFIGURATION_ERROR`);
* its policy, cached per token for the authorizer's TTL, is checked against the method's ARN: an
  explicit Deny or no Allow is 403 `ACCESS_DENIED`, else the request goes on with the policy's
  `principalId` and `context` in `requestContext.authorizer`.

The authorizer and its settings are read from the deployed template, so the local gateway runs
what the stack declares (infra/jwt_authorizer.py)."""

from __future__ import annotations

import threading
import time
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from local.functions import FunctionPool
from local.iam_policy import UnsupportedPolicy, allowed, execute_api_arn
from local.sigv4 import Refusal, request_path

UNAUTHORIZED = Refusal("UNAUTHORIZED", 401, "Unauthorized")
AUTHORIZER_FAILED = Refusal("AUTHORIZER_FAILURE", 500, "Internal server error")
AUTHORIZER_MISCONFIGURED = Refusal("AUTHORIZER_CONFIGURATION_ERROR", 500, "Internal server error")
EXPLICIT_DENY = Refusal(
    "ACCESS_DENIED", 403, "User is not authorized to access this resource with an explicit deny", message_key="Message"
)
NOT_ALLOWED = Refusal("ACCESS_DENIED", 403, "User is not authorized to access this resource", message_key="Message")
AUTHORIZER_PATIENCE_SECONDS = 29


@dataclass(frozen=True)
class Authorized:
    """What API Gateway passes to the function as `requestContext.authorizer`."""

    principal_id: str
    context: Mapping[str, Any]

    def as_request_context(self) -> dict[str, Any]:
        return {"principalId": self.principal_id, **self.context}


@dataclass(frozen=True)
class LambdaTokenAuthorizerSpec:
    function_logical_id: str
    header: str
    ttl_seconds: int

    @classmethod
    def from_template(cls, template: Mapping[str, Any]) -> LambdaTokenAuthorizerSpec | None:
        for resource in template.get("Resources", {}).values():
            if resource.get("Type") != "AWS::ApiGateway::Authorizer":
                continue
            properties = resource["Properties"]
            if properties.get("Type") != "TOKEN":
                raise NotImplementedError(
                    f"the local gateway runs TOKEN authorizers only, not {properties.get('Type')}"
                )
            source = str(properties["IdentitySource"])  # method.request.header.NAME
            return cls(
                function_logical_id=_function_of(properties["AuthorizerUri"]),
                header=source.rsplit(".", 1)[-1],
                ttl_seconds=int(properties.get("AuthorizerResultTtlInSeconds", 300)),
            )
        return None


def _function_of(uri: Any) -> str:
    """The logical id of the function an AuthorizerUri (a Fn::Join of Fn::GetAtt Arn) names."""
    found: list[str] = []

    def walk(value: Any) -> None:
        if isinstance(value, dict):
            if "Fn::GetAtt" in value:
                found.append(value["Fn::GetAtt"][0])
            for inner in value.values():
                walk(inner)
        elif isinstance(value, list):
            for inner in value:
                walk(inner)

    walk(uri)
    if not found:
        raise ValueError(f"no function in the authorizer's URI {uri!r}")
    return found[0]


class LambdaTokenAuthorizer:
    """API Gateway running a Lambda authorizer of type TOKEN for each request of a CUSTOM method."""

    def __init__(
        self,
        spec: LambdaTokenAuthorizerSpec,
        function: FunctionPool,
        region: str,
        account_id: str,
        api_id: str,
        stage: str,
    ) -> None:
        self._spec = spec
        self._function = function
        self._arn = (region, account_id, api_id, stage)
        self._cache: dict[str, tuple[float, dict[str, Any]]] = {}
        self._lock = threading.Lock()

    def check(self, method: str, raw_path: str, headers: Mapping[str, str]) -> Authorized | Refusal:
        token = next((value for name, value in headers.items() if name.lower() == self._spec.header.lower()), "")
        if not token.strip():
            return UNAUTHORIZED
        method_arn = execute_api_arn(*self._arn, method, request_path(raw_path))
        answer = self._policy(token, method_arn)
        if isinstance(answer, Refusal):
            return answer
        try:
            document = answer["policyDocument"]
            denials = [
                {**statement, "Effect": "Allow"} for statement in _statements(document) if statement["Effect"] == "Deny"
            ]
            if denials and allowed([{"Statement": denials}], "execute-api:Invoke", method_arn, {}):
                return EXPLICIT_DENY
            if not allowed([document], "execute-api:Invoke", method_arn, {}):
                return NOT_ALLOWED
            return Authorized(str(answer["principalId"]), dict(answer.get("context") or {}))
        except (KeyError, TypeError, UnsupportedPolicy):
            return AUTHORIZER_MISCONFIGURED

    def _policy(self, token: str, method_arn: str) -> dict[str, Any] | Refusal:
        with self._lock:
            cached = self._cache.get(token)
            if cached is not None and time.monotonic() < cached[0]:
                return cached[1]
        event = {"type": "TOKEN", "authorizationToken": token, "methodArn": method_arn}
        invocation = self._function.invoke(event, synchronous=True, patience_seconds=AUTHORIZER_PATIENCE_SECONDS)
        if not invocation.ok:
            return UNAUTHORIZED if invocation.error_message == "Unauthorized" else AUTHORIZER_FAILED
        if not isinstance(invocation.payload, dict) or "policyDocument" not in invocation.payload:
            return AUTHORIZER_MISCONFIGURED
        if self._spec.ttl_seconds:
            with self._lock:
                self._cache[token] = (time.monotonic() + self._spec.ttl_seconds, invocation.payload)
        return invocation.payload


def _statements(document: Mapping[str, Any]) -> list[Mapping[str, Any]]:
    statements = document.get("Statement", [])
    return statements if isinstance(statements, list) else [statements]
