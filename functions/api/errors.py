"""The one place where domain errors and bad input become HTTP answers.

Every error body is `{"error": {"code", "message"}}`. DynamoDB failures become a plain retryable
503: its own error names (TransactionConflict, ThrottlingException, ...) never reach a caller.
"""

from __future__ import annotations

from http import HTTPStatus

from aws_lambda_powertools.event_handler import APIGatewayRestResolver, Response, content_types
from aws_lambda_powertools.event_handler.openapi.exceptions import RequestValidationError
from aws_lambda_powertools.metrics import MetricUnit

from functions.api.json_body import BodyRefused, render
from functions.api.models import ErrorDetail, ErrorResponse
from functions.core.errors import (
    AccountBeingDeleted,
    AccountNotFound,
    CallerGaveUp,
    DefaultTypeNotDeletable,
    DomainError,
    IdempotencyKeyMismatch,
    IdempotencyKeyReused,
    InvalidCursor,
    LimitExceeded,
    OverrideNotFound,
    PeriodChangeRefused,
    PeriodClosed,
    PlanNotFound,
    PlanType,
    PreconditionFailed,
    QuotaNotPeriodic,
    ResourceNotFound,
    StoreUnavailable,
    TooManyResourceTypes,
    TypeNotEmpty,
)
from functions.core.refusals import refusal_log_fields
from functions.shared.observability import logger, metrics

STATUS_OF: dict[type[DomainError], HTTPStatus] = {
    AccountNotFound: HTTPStatus.NOT_FOUND,
    ResourceNotFound: HTTPStatus.NOT_FOUND,
    LimitExceeded: HTTPStatus.CONFLICT,
    IdempotencyKeyReused: HTTPStatus.CONFLICT,
    IdempotencyKeyMismatch: HTTPStatus.UNPROCESSABLE_ENTITY,
    InvalidCursor: HTTPStatus.BAD_REQUEST,
    PreconditionFailed: HTTPStatus.PRECONDITION_FAILED,
    TooManyResourceTypes: HTTPStatus.CONFLICT,
    PeriodChangeRefused: HTTPStatus.CONFLICT,
    PeriodClosed: HTTPStatus.CONFLICT,
    QuotaNotPeriodic: HTTPStatus.CONFLICT,
    CallerGaveUp: HTTPStatus.GATEWAY_TIMEOUT,
    PlanNotFound: HTTPStatus.NOT_FOUND,
    OverrideNotFound: HTTPStatus.NOT_FOUND,
    TypeNotEmpty: HTTPStatus.CONFLICT,
    AccountBeingDeleted: HTTPStatus.CONFLICT,
    PlanType: HTTPStatus.CONFLICT,
    DefaultTypeNotDeletable: HTTPStatus.BAD_REQUEST,
}

RETRY_AFTER_SECONDS = "1"


def error_response(
    status: HTTPStatus, code: str, message: str, headers: dict[str, str] | None = None, request_id: str | None = None
) -> Response[str]:
    """An error in the envelope; `request_id` is API Gateway's, as its own errors carry it."""
    body = ErrorResponse(error=ErrorDetail(code=code, message=message, requestId=request_id))
    return Response(
        status_code=status.value,
        content_type=content_types.APPLICATION_JSON,
        body=render(body.model_dump(exclude_none=True)),
        headers=headers,
    )


def describe_validation_errors(error: RequestValidationError) -> str:
    if isinstance(error.__cause__, BodyRefused):  # JSON the API does not take: the message names the place
        return error.__cause__.msg
    parts = []
    for detail in error.errors():
        if detail.get("type") == "json_invalid":
            parts.append("body: not valid JSON")
            continue
        location = ".".join(str(part) for part in detail.get("loc", ()) if part != "body") or "body"
        parts.append(f"{location}: {detail.get('msg', 'invalid')}")
    return "; ".join(parts) or "invalid request"


def log_refusal(error: LimitExceeded, shadow: bool = False) -> None:
    """The refusal's metric and line: the Limit Refused events' only source, a subscription filter
    selects the line (functions/core/refusals.py), so the refusal costs no call of its own. A shadow
    quota's create admitted past its limit (`shadow`) logs the refusal enforcement would have made,
    marked shadow, and counts in `ShadowRefusals` rather than `AdmissionsRefused`."""
    name = "ShadowRefusals" if shadow else "AdmissionsRefused"
    metrics.add_metric(name=name, unit=MetricUnit.Count, value=1)
    message = "create admitted in shadow mode past its limit" if shadow else "create refused"
    logger.info(message, extra=refusal_log_fields(error.quota, error.limit, error.units, shadow=shadow))


def register(app: APIGatewayRestResolver) -> None:
    def request_id() -> str | None:
        return app.current_event.request_context.request_id

    @app.exception_handler(DomainError)  # type: ignore[untyped-decorator]
    def domain_error(error: DomainError) -> Response[str]:
        if isinstance(error, LimitExceeded):  # the dashboard's "admissions refused"
            log_refusal(error)
        # By the most specific class listed: the core may raise a refinement (admission's AccountFull).
        status = next((STATUS_OF[kind] for kind in type(error).__mro__ if kind in STATUS_OF), HTTPStatus.BAD_REQUEST)
        return error_response(status, error.code, str(error), request_id=request_id())

    @app.exception_handler(RequestValidationError)  # type: ignore[untyped-decorator]
    def invalid_request(error: RequestValidationError) -> Response[str]:
        return error_response(
            HTTPStatus.BAD_REQUEST, "ValidationError", describe_validation_errors(error), request_id=request_id()
        )

    @app.exception_handler(StoreUnavailable)  # type: ignore[untyped-decorator]
    def store_unavailable(error: StoreUnavailable) -> Response[str]:
        logger.warning("store unavailable", extra={"reason": str(error)})
        return error_response(
            HTTPStatus.SERVICE_UNAVAILABLE,
            "ServiceUnavailable",
            "the service is briefly unavailable; retry the request",
            headers={"Retry-After": RETRY_AFTER_SECONDS},
            request_id=request_id(),
        )

    @app.not_found
    def route_not_found(_: Exception) -> Response[str]:
        return error_response(HTTPStatus.NOT_FOUND, "RouteNotFound", "no such route", request_id=request_id())
