"""One attempt of a call: signed with SigV4 for `execute-api` by botocore's own signer, with the
session's credentials as they are now, sent over botocore's connection pool, and its answer read.

The credentials are read from the session for every request, so an assumed role's credentials,
which botocore refreshes before they expire, are always the current ones.
"""

from __future__ import annotations

from importlib.metadata import PackageNotFoundError, version
from typing import Any, Protocol, TypeVar
from urllib.parse import urlencode

import botocore
from botocore.auth import SigV4Auth
from botocore.awsrequest import AWSPreparedRequest, AWSRequest
from botocore.exceptions import ConnectionError as BotocoreConnectionError
from botocore.exceptions import HTTPClientError, NoCredentialsError, SSLError
from botocore.httpsession import URLLib3Session

from hybrid_counter_client.errors import HybridCounterError, NoResponse, UnexpectedResponse, error_for
from hybrid_counter_client.models import Undecodable
from hybrid_counter_client.operations import Answer, Call

T = TypeVar("T")

SERVICE = "execute-api"
REQUEST_ID_HEADER = "x-amzn-requestid"
try:
    _VERSION = version("hybrid-counter-client")
except PackageNotFoundError:  # run from a source tree
    _VERSION = "0+source"
USER_AGENT = f"hybrid-counter-client/{_VERSION} botocore/{botocore.__version__}"


class Session(Protocol):
    """What the client needs of a session: `boto3.Session` is one."""

    @property
    def region_name(self) -> str | None: ...

    def get_credentials(self) -> Any: ...


class Transport:
    def __init__(self, api_url: str, session: Session, region: str | None, timeout: float) -> None:
        self.base_url = api_url.rstrip("/")
        self.session = session
        resolved = region or session.region_name
        if not resolved:
            raise ValueError("no region: pass region=, or give the session one (AWS_REGION, ~/.aws/config)")
        self.region: str = resolved
        self._http = URLLib3Session(timeout=timeout)

    def signed(self, call: Call[Any]) -> AWSPreparedRequest:
        credentials = self.session.get_credentials()
        if credentials is None:
            raise NoCredentialsError()
        query = f"?{urlencode(dict(call.query))}" if call.query else ""
        headers = {"User-Agent": USER_AGENT, **call.headers}
        if call.body is not None:
            headers["Content-Type"] = "application/json"
        request = AWSRequest(
            method=call.operation.method, url=f"{self.base_url}{call.path}{query}", data=call.body, headers=headers
        )
        SigV4Auth(credentials.get_frozen_credentials(), SERVICE, self.region).add_auth(request)
        return request.prepare()

    def send(self, call: Call[Any]) -> Answer:
        """One attempt; NoResponse when no HTTP answer came. A TLS failure is raised as botocore's
        SSLError: trying again would not change it."""
        request = self.signed(call)
        try:
            response = self._http.send(request)
        except SSLError:
            raise
        except (HTTPClientError, BotocoreConnectionError) as error:
            raise NoResponse(str(error)) from error
        headers = {name.lower(): value for name, value in response.headers.items()}
        return Answer(response.status_code, headers, response.content)

    def call(self, call: Call[T]) -> T:
        """One attempt of `call`: its result, or the error its answer is."""
        return result(call, self.send(call))

    def close(self) -> None:
        self._http.close()


def result(call: Call[T], answer: Answer) -> T:
    """The call's result from its answer, or the error the answer is."""
    if answer.status in call.operation.success:
        try:
            return call.read(answer)
        except (Undecodable, ValueError) as error:
            raise _unexpected(answer, f"{call.operation.operation_id} answered {error}") from error
    if answer.status < 400:
        raise _unexpected(answer, f"{call.operation.operation_id} does not answer {answer.status}")
    raise error_of(answer)


def error_of(answer: Answer) -> HybridCounterError:
    """The exception an error answer is: by the envelope's code, else by its status family."""
    try:
        envelope = answer.json()
    except ValueError:
        envelope = None
    detail = envelope.get("error") if isinstance(envelope, dict) else None
    detail = detail if isinstance(detail, dict) else {}
    code = detail.get("code") if isinstance(detail.get("code"), str) else None
    message = detail.get("message")
    if not isinstance(message, str):
        message = answer.body[:200].decode("utf-8", "replace") or f"HTTP {answer.status}"
    request_id = detail.get("requestId")
    if not isinstance(request_id, str):
        request_id = answer.headers.get(REQUEST_ID_HEADER)
    return error_for(answer.status, code, message, request_id, retry_after(answer))


def retry_after(answer: Answer) -> float | None:
    """`Retry-After` in seconds; None without one, or for the HTTP-date form, which the API never
    sends (reading it would take the wall clock)."""
    try:
        seconds = float(answer.headers.get("retry-after", ""))
    except ValueError:
        return None
    return seconds if seconds >= 0 else None


def _unexpected(answer: Answer, message: str) -> UnexpectedResponse:
    return UnexpectedResponse(message, status=answer.status, request_id=answer.headers.get(REQUEST_ID_HEADER))
