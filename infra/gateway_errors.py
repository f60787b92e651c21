"""One error shape at the edge: what API Gateway answers itself (an unsigned request, a denied one,
a throttle, a timeout) rendered in the API's `{"error": {"code", "message"}}` envelope, with the
request id, instead of API Gateway's `{"message": ...}` (docs/security.md lists every answer).

Each gateway response keeps its type's own status; only the body (and, for throttles, a
`Retry-After` header) changes. `$context.error.messageString` is API Gateway's message as a quoted
JSON string ("Gateway response types", "Set up gateway responses to customize error responses",
API Gateway developer guide).

One type changes its status: INTEGRATION_FAILURE, what API Gateway answers when Lambda rejects the
invocation (the function's concurrency is used up: 500 by default) and, as well, when the function
fails or its response is over Lambda's 6 MB (502 by default). It is answered 503
`ServiceUnavailable` with `Retry-After`, as the function answers its own outage, so a client retries
a throttle. A failed invocation is answered the same, since a gateway response cannot tell them
apart: the API's writes are safe to retry (an Idempotency-Key's create, a delete, a PUT), the
function answers its own errors itself, and a failure that persists is the function's Errors
metric and alarms to see, not the client's (docs/security.md).
"""

from __future__ import annotations

from aws_cdk import aws_apigateway as apigateway

# Gateway response type -> the error code clients see. The two defaults cover every other type.
CODES: dict[str, str] = {
    "MISSING_AUTHENTICATION_TOKEN": "MissingAuthenticationToken",
    "INVALID_SIGNATURE": "InvalidSignature",
    "EXPIRED_TOKEN": "ExpiredToken",
    "UNAUTHORIZED": "Unauthorized",
    "ACCESS_DENIED": "AccessDenied",
    "THROTTLED": "Throttled",
    "QUOTA_EXCEEDED": "QuotaExceeded",
    "REQUEST_TOO_LARGE": "PayloadTooLarge",
    "BAD_REQUEST_BODY": "ValidationError",
    "INTEGRATION_TIMEOUT": "IntegrationTimeout",
    "INTEGRATION_FAILURE": "ServiceUnavailable",
    "DEFAULT_4XX": "RequestRefused",
    "DEFAULT_5XX": "InternalError",
}
# Throttles say when to come back, as the API's own 503 does. A gateway response's header is a static
# value or a request parameter ("x-amazon-apigateway-gateway-responses.gatewayResponse object", API
# Gateway developer guide): it cannot say how busy the function is, so every throttled caller is told
# 1 s, and the client spreads its callers' retries over the time after it (the Python client's
# retries.py); the local gateway sends what this template says.
RETRY_AFTER_SECONDS = "1"
RETRY_AFTER_TYPES = ("THROTTLED", "QUOTA_EXCEEDED", "INTEGRATION_FAILURE")
# The types answered with another status than their own (see above).
STATUS_CODES = {"INTEGRATION_FAILURE": "503"}


def envelope(code: str) -> str:
    """The body template: the API's error envelope around API Gateway's own message."""
    return (
        '{"error": {"code": "' + code + '", "message": $context.error.messageString, '
        '"requestId": "$context.requestId"}}'
    )


def add_error_envelopes(rest_api: apigateway.RestApi) -> None:
    for response_type, code in CODES.items():
        headers = {"Retry-After": f"'{RETRY_AFTER_SECONDS}'"} if response_type in RETRY_AFTER_TYPES else None
        rest_api.add_gateway_response(
            f"{code}Response",
            type=apigateway.ResponseType.of(response_type),
            templates={"application/json": envelope(code)},
            response_headers=headers,
            status_code=STATUS_CODES.get(response_type),
        )
