"""The proxy event as the resolver reads it."""

from __future__ import annotations

from typing import Any

from aws_lambda_powertools.event_handler import content_types


def as_json_request(event: dict[str, Any]) -> dict[str, Any]:
    """The API speaks JSON only: read every body as JSON, whatever Content-Type the client sent
    (curl's `-d` says form-urlencoded, which the resolver would otherwise parse as a form).

    An empty body too, which as JSON is no value at all (a route that takes a body answers 400
    ValidationError): by its type, Powertools raised ValueError for a multipart type without a
    boundary (the function failed, a 503) and answered any type it does not read with a 415
    outside the error envelope."""
    headers = {k: v for k, v in (event.get("headers") or {}).items() if k.lower() != "content-type"}
    multi = {k: v for k, v in (event.get("multiValueHeaders") or {}).items() if k.lower() != "content-type"}
    headers["Content-Type"] = content_types.APPLICATION_JSON
    multi["Content-Type"] = [content_types.APPLICATION_JSON]
    return {**event, "headers": headers, "multiValueHeaders": multi}
