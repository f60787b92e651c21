"""API Gateway REST proxy events (payload v1) built as API Gateway builds them, and a tiny client."""

from __future__ import annotations

import base64
import json
from dataclasses import dataclass
from typing import Any
from urllib.parse import parse_qsl, urlsplit

from functions.shared.clock import Clock
from tests.support.lambda_context import FakeLambdaContext

ADMIN_ARN = "arn:aws:iam::123456789012:user/admin"


def proxy_event(
    method: str, url: str, received_ms: int, body: Any = None, headers: dict[str, str] | None = None
) -> dict[str, Any]:
    """`received_ms`: when API Gateway received the request (epoch ms)."""
    parts = urlsplit(url)
    query = dict(parse_qsl(parts.query, keep_blank_values=True)) or None
    # Bytes that are not UTF-8 arrive base64-encoded, as API Gateway passes a binary body.
    encoded = isinstance(body, bytes)
    text = (
        base64.b64encode(body).decode()
        if encoded
        else body
        if isinstance(body, str) or body is None
        else json.dumps(body)
    )
    headers = {"Content-Type": "application/json", **(headers or {})}
    return {
        "resource": "/{proxy+}",
        "path": parts.path,
        "httpMethod": method,
        "headers": headers,
        "multiValueHeaders": {name: [value] for name, value in headers.items()},
        "queryStringParameters": query,
        "multiValueQueryStringParameters": {k: [v] for k, v in query.items()} if query else None,
        "pathParameters": {"proxy": parts.path.lstrip("/")},
        "stageVariables": None,
        "requestContext": {
            "resourcePath": "/{proxy+}",
            "httpMethod": method,
            "path": f"/prod{parts.path}",
            "stage": "prod",
            "requestId": "test-request",
            "requestTimeEpoch": received_ms,
            # An IAM-signed admin call: API Gateway names the caller in `userArn`.
            "identity": {"sourceIp": "127.0.0.1", "userArn": ADMIN_ARN},
        },
        "body": text,
        "isBase64Encoded": encoded,
    }


@dataclass
class ApiResponse:
    status: int
    headers: dict[str, str]
    text: str

    def json(self) -> Any:
        return json.loads(self.text) if self.text else None


class ApiClient:
    """Calls the api handler in-process with proxy events, like API Gateway would, received at
    `clock`'s time (the handler's clock, so that a request is not already late when it arrives)."""

    def __init__(self, handler: Any, clock: Clock) -> None:
        self._handler = handler
        self._clock = clock

    def request(
        self,
        method: str,
        url: str,
        body: Any = None,
        headers: dict[str, str] | None = None,
        received_ms: int | None = None,
    ) -> ApiResponse:
        received = self._clock.epoch_ms() if received_ms is None else received_ms
        event = proxy_event(method, url, received, body, headers)
        result = self._handler(event, FakeLambdaContext(function_name="api"))
        merged = {k: v[-1] for k, v in (result.get("multiValueHeaders") or {}).items()}
        merged.update(result.get("headers") or {})
        return ApiResponse(result["statusCode"], merged, result.get("body") or "")

    def put_account(self, account_id: str, limit: int) -> ApiResponse:
        return self.request("PUT", f"/accounts/{account_id}", {"limit": limit})

    def put_type(self, account_id: str, resource_type: str, limit: int) -> ApiResponse:
        return self.request("PUT", f"/accounts/{account_id}/types/{resource_type}", {"limit": limit})

    def account(self, account_id: str) -> dict[str, Any]:
        response = self.request("GET", f"/accounts/{account_id}")
        assert response.status == 200, response.text
        return response.json()  # type: ignore[no-any-return]

    def create(
        self,
        account_id: str,
        name: str = "r",
        key: str | None = None,
        resource_type: str | None = None,
        **attributes: Any,
    ) -> ApiResponse:
        headers = {"Idempotency-Key": key} if key else None
        body = {"name": name, "attributes": attributes}
        return self.request("POST", resources_url(account_id, resource_type), body, headers)

    def delete(self, account_id: str, resource_id: str, resource_type: str | None = None) -> ApiResponse:
        return self.request("DELETE", f"{resources_url(account_id, resource_type)}/{resource_id}")


def resources_url(account_id: str, resource_type: str | None = None) -> str:
    """An account's resources: its default type's (the routes without a type), or a type's."""
    if resource_type is None:
        return f"/accounts/{account_id}/resources"
    return f"/accounts/{account_id}/types/{resource_type}/resources"
