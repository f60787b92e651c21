"""API Gateway's gateway responses, locally: what it answers itself (a refused signature, a denied
call, an unknown path, a failed or timed-out integration), rendered from the stack's
`AWS::ApiGateway::GatewayResponse` resources when it declares them, else API Gateway's default
body (API Gateway developer guide, "Gateway response types" and "Set up gateway responses to
customize error responses"). The emulator's CloudFormation does not keep gateway responses, so they
are read from the deployed template.

A template may use `$context.error.messageString` (the message as a quoted JSON string),
`$context.error.message`, `$context.error.responseType` and `$context.requestId`; a response
parameter `gatewayresponse.header.NAME` with a static value ('...') becomes a header.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

HEADER_PREFIX = "gatewayresponse.header."


@dataclass(frozen=True)
class GatewayResponse:
    status: int | None  # None: the response type's own status
    headers: dict[str, str]
    template: str | None  # the application/json body template


@dataclass(frozen=True)
class Answer:
    status: int
    headers: dict[str, str]
    body: bytes


@dataclass
class GatewayResponses:
    declared: dict[str, GatewayResponse] = field(default_factory=dict)  # response type -> response

    @classmethod
    def from_template(cls, template: Mapping[str, Any]) -> GatewayResponses:
        declared = {}
        for resource in (template.get("Resources") or {}).values():
            if resource.get("Type") != "AWS::ApiGateway::GatewayResponse":
                continue
            properties = resource.get("Properties") or {}
            headers = {
                name[len(HEADER_PREFIX) :]: str(value).strip("'")
                for name, value in (properties.get("ResponseParameters") or {}).items()
                if name.startswith(HEADER_PREFIX)
            }
            status = properties.get("StatusCode")
            declared[properties["ResponseType"]] = GatewayResponse(
                int(status) if status else None,
                headers,
                (properties.get("ResponseTemplates") or {}).get("application/json"),
            )
        return cls(declared)

    def answer(
        self, response_type: str, status: int, message: str, request_id: str, message_key: str = "message"
    ) -> Answer:
        """The answer for a response of `response_type` whose default status is `status`."""
        fallback = "DEFAULT_4XX" if status < 500 else "DEFAULT_5XX"
        response = self.declared.get(response_type) or self.declared.get(fallback)
        headers = {"Content-Type": "application/json", "x-amzn-RequestId": request_id}
        if response is None or response.template is None:
            return Answer(status, headers, json.dumps({message_key: message}).encode())
        body = (
            response.template.replace("$context.error.messageString", json.dumps(message))
            .replace("$context.error.message", message)
            .replace("$context.error.responseType", response_type)
            .replace("$context.requestId", request_id)
        )
        return Answer(response.status or status, {**headers, **response.headers}, body.encode())
