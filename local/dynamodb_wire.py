"""What the emulator's DynamoDB layers (partition limits, client request tokens, the request
counter) share: the request's body, which the first reader must give back, DynamoDB's error answer,
and the JSON a layer's own endpoint answers (and the client that reads it)."""

from __future__ import annotations

import http.client
import io
import json
from collections.abc import Callable, Mapping
from typing import Any

ERROR_PREFIX = "com.amazonaws.dynamodb.v20120810#"


def read_body(environ: dict[str, Any]) -> bytes:
    """The request's JSON body; a copy is left in `environ` for the layers and moto below."""
    length = int(environ.get("CONTENT_LENGTH") or 0)
    body: bytes = environ["wsgi.input"].read(length) if length else b"{}"
    give_body(environ, body)
    return body


def give_body(environ: dict[str, Any], body: bytes) -> None:
    environ["wsgi.input"], environ["CONTENT_LENGTH"] = io.BytesIO(body), str(len(body))


def error_body(code: str, message: str, **fields: Any) -> dict[str, Any]:
    """An error as DynamoDB's JSON protocol writes it: `__type`, `message`, modeled fields."""
    return {"__type": f"{ERROR_PREFIX}{code}", "message": message, **fields}


def dynamodb_error(start_response: Callable[..., Any], code: str, message: str, **extra: Any) -> list[bytes]:
    """Answer the request with that error, a 400."""
    body = json.dumps(error_body(code, message, **extra)).encode()
    start_response(
        "400 Bad Request",
        [("Content-Type", "application/x-amz-json-1.0"), ("Content-Length", str(len(body)))],
    )
    return [body]


def request_region(environ: Mapping[str, Any]) -> str:
    """The region of the request's SigV4 credential scope (Credential=KEY/DATE/REGION/SERVICE/...)."""
    authorization = environ.get("HTTP_AUTHORIZATION", "")
    try:
        return str(authorization.split("Credential=")[1].split("/")[2])
    except IndexError:
        return "us-east-1"


def json_answer(start_response: Callable[..., Any], value: Any) -> list[bytes]:
    """A layer's own endpoint answering `value` as JSON."""
    body = json.dumps(value).encode()
    start_response("200 OK", [("Content-Type", "application/json"), ("Content-Length", str(len(body)))])
    return [body]


def get_json(emulator_url: str, path: str) -> Any:
    """GET a layer's own endpoint of the emulator at `emulator_url` and parse its JSON."""
    host, port = emulator_url.removeprefix("http://").split(":")
    connection = http.client.HTTPConnection(host, int(port), timeout=10)
    try:
        connection.request("GET", path)
        return json.loads(connection.getresponse().read())
    finally:
        connection.close()
