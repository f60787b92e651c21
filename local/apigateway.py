"""API Gateway (REST, Lambda proxy integration, payload v1) in front of the deployed api function."""

from __future__ import annotations

import base64
import logging
import re
import threading
import time
import uuid
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any
from urllib.parse import parse_qsl, unquote, urlsplit

from local.event_sources import log_invocation
from local.functions import FunctionPool

logger = logging.getLogger("local.runtime")

METHODS = ("GET", "POST", "PUT", "PATCH", "DELETE", "HEAD", "OPTIONS")


@dataclass(frozen=True)
class Route:
    """One method of one API resource, e.g. ANY /{proxy+}, integrated with a function."""

    resource_path: str
    method: str  # an HTTP method or ANY
    function: FunctionPool

    def match(self, method: str, path: str) -> dict[str, str] | None:
        if self.method not in ("ANY", method):
            return None
        found = re.fullmatch(_path_pattern(self.resource_path), path)
        return None if found is None else {k: unquote(v) for k, v in found.groupdict().items()}

    @property
    def specificity(self) -> tuple[int, int]:
        """Literal paths beat parameters, parameters beat greedy ones, a method beats ANY."""
        return (-self.resource_path.count("+"), int(self.method != "ANY"))


def _path_pattern(resource_path: str) -> str:
    pattern = ""
    for part in re.split(r"(\{[^}]+\})", resource_path):
        if part.startswith("{") and part.endswith("+}"):
            pattern += f"(?P<{part[1:-2]}>.+)"
        elif part.startswith("{"):
            pattern += f"(?P<{part[1:-1]}>[^/]+)"
        else:
            pattern += re.escape(part)
    return pattern


def proxy_event(
    method: str,
    raw_path: str,
    headers: Sequence[tuple[str, str]],
    body: bytes,
    resource_path: str,
    path_parameters: Mapping[str, str] | None,
    stage: str,
    source_ip: str = "127.0.0.1",
) -> dict[str, Any]:
    """The Lambda proxy integration's request event (payload format 1.0)."""
    parts = urlsplit(raw_path)
    query = parse_qsl(parts.query, keep_blank_values=True)
    multi_query: dict[str, list[str]] = {}
    for name, value in query:
        multi_query.setdefault(name, []).append(value)
    multi_headers: dict[str, list[str]] = {}
    for name, value in headers:
        multi_headers.setdefault(name, []).append(value)
    try:
        text: str | None = body.decode("utf-8") if body else None
        encoded = False
    except UnicodeDecodeError:
        text, encoded = base64.b64encode(body).decode(), True
    return {
        "resource": resource_path,
        "path": parts.path,
        "httpMethod": method,
        "headers": {name: values[-1] for name, values in multi_headers.items()} or None,
        "multiValueHeaders": multi_headers or None,
        "queryStringParameters": {name: values[-1] for name, values in multi_query.items()} or None,
        "multiValueQueryStringParameters": multi_query or None,
        "pathParameters": dict(path_parameters) if path_parameters else None,
        "stageVariables": None,
        "requestContext": {
            "resourcePath": resource_path,
            "httpMethod": method,
            "path": f"/{stage}{parts.path}",
            "stage": stage,
            "requestId": str(uuid.uuid4()),
            "requestTimeEpoch": int(time.time() * 1000),
            "protocol": "HTTP/1.1",
            "identity": {"sourceIp": source_ip, "userAgent": dict(headers).get("User-Agent", "")},
        },
        "body": text,
        "isBase64Encoded": encoded,
    }


class ApiGateway:
    def __init__(self, routes: Sequence[Route], stage: str, host: str, port: int) -> None:
        self._routes = sorted(routes, key=lambda route: route.specificity, reverse=True)
        self._stage = stage
        self._host = host
        self._server = ThreadingHTTPServer((host, port), self._handler_class())
        self._server.daemon_threads = True
        self._thread = threading.Thread(target=self._server.serve_forever, name="api-gateway", daemon=True)

    @property
    def url(self) -> str:
        return f"http://{self._host}:{self._server.server_port}"

    def start(self) -> None:
        self._thread.start()

    def stop(self) -> None:
        self._server.shutdown()
        self._server.server_close()

    def route(self, method: str, path: str) -> tuple[Route, dict[str, str]] | None:
        for route in self._routes:
            parameters = route.match(method, path)
            if parameters is not None:
                return route, parameters
        return None

    def _handler_class(self) -> type[BaseHTTPRequestHandler]:
        gateway = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, format: str, *args: Any) -> None:
                return  # one line per invocation is logged instead

            def _serve(self) -> None:
                length = int(self.headers.get("Content-Length") or 0)
                body = self.rfile.read(length) if length else b""
                path = urlsplit(self.path).path
                found = gateway.route(self.command, path)
                if found is None:
                    self._reply(
                        403, {"Content-Type": "application/json"}, b'{"message":"Missing Authentication Token"}'
                    )
                    return
                route, parameters = found
                event = proxy_event(
                    self.command,
                    self.path,
                    list(self.headers.items()),
                    body,
                    route.resource_path,
                    parameters,
                    gateway._stage,
                    self.client_address[0],
                )
                invocation = route.function.invoke(event)
                log_invocation(route.function.function.short_name, 1, invocation, f"{self.command} {path}")
                if not invocation.ok or not isinstance(invocation.payload, Mapping):
                    status = 504 if invocation.timed_out else 502
                    message = b'{"message": "Internal server error"}'
                    self._reply(status, {"Content-Type": "application/json"}, message)
                    return
                self._reply(*integration_response(invocation.payload))

            def _reply(self, status: int, headers: Mapping[str, str | list[str]], body: bytes) -> None:
                self.send_response(status)
                for name, value in headers.items():
                    for one in value if isinstance(value, list) else [value]:
                        self.send_header(name, one)
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                if self.command != "HEAD":
                    self.wfile.write(body)

        for method in METHODS:
            setattr(Handler, f"do_{method}", Handler._serve)
        return Handler


def integration_response(payload: Mapping[str, Any]) -> tuple[int, dict[str, str | list[str]], bytes]:
    """Status, headers and body from a proxy integration's response."""
    headers: dict[str, str | list[str]] = {}
    for name, values in (payload.get("multiValueHeaders") or {}).items():
        headers[name] = [str(value) for value in values]
    for name, value in (payload.get("headers") or {}).items():
        headers[name] = str(value)
    body = payload.get("body") or ""
    raw = base64.b64decode(body) if payload.get("isBase64Encoded") else str(body).encode()
    headers.setdefault("Content-Type", "application/json")
    return int(payload.get("statusCode", 200)), headers, raw
