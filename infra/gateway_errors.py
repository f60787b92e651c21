"""One error shape at the edge: what API Gateway answers itself (an unsigned request, a denied one,
a throttle, a timeout) rendered in the API's `{"error": {"code", "message"}}` envelope, with the
request id, instead of API Gateway's `{"message": ...}` (docs/security.md lists every answer).

Each gateway response keeps its type's own status; only the body (and, for throttles, a
`Retry-After` header) changes. `$context.error.messageString` is API Gateway's message as a quoted
JSON string ("Gateway response types", "Set up gateway responses to customize error responses",
API Gateway developer guide).
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
    "DEFAULT_4XX": "RequestRefused",
    "DEFAULT_5XX": "InternalError",
}
# Throttles say when to come back, as the API's own 503 does.
RETRY_AFTER_SECONDS = "1"
RETRY_AFTER_TYPES = ("THROTTLED", "QUOTA_EXCEEDED")


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
        )
