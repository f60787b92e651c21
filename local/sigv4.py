"""SigV4 for the local API: signing a request (test clients, `python -m ops call`) and checking one
as API Gateway does for a method whose authorization is `AWS_IAM` (docs/local-runtime.md).

Both sides use botocore's own signer, so a request the SDK, curl's `--aws-sigv4` or any other
SigV4 client signs verifies here exactly when its signature is right. What API Gateway answers when
it is not is in `Refusal` (API Gateway developer guide, "Control access to a REST API with IAM
permissions" and "Gateway response types"; SigV4's five-minute window: IAM user guide, "Signing
AWS API requests").
"""

from __future__ import annotations

import datetime
import hmac
import re
import string
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any
from urllib.parse import unquote, urlsplit

from botocore.auth import SigV4Auth
from botocore.awsrequest import AWSRequest
from botocore.credentials import Credentials
from botocore.utils import normalize_url_path

SERVICE = "execute-api"
ALGORITHM = "AWS4-HMAC-SHA256"
TIMESTAMP_FORMAT = "%Y%m%dT%H%M%SZ"
# A signed request must reach AWS within five minutes of its timestamp, either way.
MAX_CLOCK_SKEW = datetime.timedelta(minutes=5)

_AUTHORIZATION = re.compile(
    rf"{ALGORITHM} Credential=(?P<key>[^/]+)/(?P<date>\d{{8}})/(?P<region>[^/]+)/(?P<service>[^/]+)/aws4_request,"
    r"\s*SignedHeaders=(?P<signed>[a-z0-9;\-]+),\s*Signature=(?P<signature>[0-9a-f]{64})$"
)


_UNRESERVED = frozenset(string.ascii_letters + string.digits + "-._~")
_PERCENT_ENCODED = re.compile(r"%[0-9A-Fa-f]{2}")


def request_path(raw_path: str) -> str:
    """The one path a request is routed, authorized and delivered on: the request's path with the
    percent-encodings of unreserved characters decoded (`%2e` is `.`, RFC 3986 section 6.2.2.2),
    then its dot segments and empty segments removed as the signature's canonical path removes
    them (botocore's normalize_url_path; IAM user guide, "Create a signed AWS API request"). Other
    percent-encodings (`%2F`) stay as sent: they are not path separators."""

    def decoded_if_unreserved(encoded: re.Match[str]) -> str:
        character = unquote(encoded[0])
        return character if character in _UNRESERVED else encoded[0]

    return str(normalize_url_path(_PERCENT_ENCODED.sub(decoded_if_unreserved, urlsplit(raw_path).path)))


def sign(
    credentials: Credentials,
    region: str,
    method: str,
    url: str,
    body: bytes | None,
    headers: Mapping[str, str],
    at: datetime.datetime | None = None,
) -> dict[str, str]:
    """The headers to send: `headers` plus X-Amz-Date, Authorization (and the session token).
    `at`: sign as of that moment rather than now (a test of the five-minute window)."""
    request = AWSRequest(method=method, url=url, data=body or b"", headers=dict(headers))
    signer = SigV4Auth(credentials, SERVICE, region)
    if at is None:
        signer.add_auth(request)
    else:  # add_auth's steps, with the timestamp given
        request.context["timestamp"] = at.strftime(TIMESTAMP_FORMAT)
        signer._modify_request_before_signing(request)
        canonical = signer.canonical_request(request)
        signer._inject_signature_to_request(
            request, signer.signature(signer.string_to_sign(request, canonical), request)
        )
    return dict(request.headers.items())


@dataclass(frozen=True)
class Signed:
    """A request whose signature is right: who signed it."""

    access_key_id: str
    session_token: str | None


@dataclass(frozen=True)
class Refusal:
    """API Gateway's answer to a request it does not let through: the gateway response type, the
    status and the body it renders by default."""

    response_type: str
    status: int
    message: str
    message_key: str = "message"  # ACCESS_DENIED's default body says "Message"


MISSING_TOKEN = Refusal("MISSING_AUTHENTICATION_TOKEN", 403, "Missing Authentication Token")
BAD_SIGNATURE = Refusal(
    "INVALID_SIGNATURE",
    403,
    "The request signature we calculated does not match the signature you provided. Check your AWS Secret "
    "Access Key and signing method. Consult the service documentation for details.",
)
# API Gateway has no gateway response type of its own for these two: a 403 of the signature check.
# An unknown access key, and a session's key without its session token or with another one.
UNKNOWN_KEY = Refusal("INVALID_SIGNATURE", 403, "The security token included in the request is invalid.")
EXPIRED_TOKEN = Refusal("EXPIRED_TOKEN", 403, "The security token included in the request is expired")


def incomplete(reason: str) -> Refusal:
    return Refusal("INVALID_SIGNATURE", 403, reason)


def expired(stamp: str, now: datetime.datetime) -> Refusal:
    earliest = (now - MAX_CLOCK_SKEW).strftime(TIMESTAMP_FORMAT)
    return Refusal(
        "INVALID_SIGNATURE",
        403,
        f"Signature expired: {stamp} is now earlier than {earliest} ({now.strftime(TIMESTAMP_FORMAT)} - 5 min.)",
    )


def not_yet_current(stamp: str, now: datetime.datetime) -> Refusal:
    latest = (now + MAX_CLOCK_SKEW).strftime(TIMESTAMP_FORMAT)
    return Refusal(
        "INVALID_SIGNATURE",
        403,
        f"Signature not yet current: {stamp} is still later than {latest} ({now.strftime(TIMESTAMP_FORMAT)} + 5 min.)",
    )


def utc_now() -> datetime.datetime:
    return datetime.datetime.now(datetime.UTC)


class _Recompute(SigV4Auth):  # type: ignore[misc]  # botocore has no type hints
    """botocore's signer, limited to the headers the caller says it signed, over the body received.

    botocore takes the payload's hash from an X-Amz-Content-SHA256 header when there is one: that
    is S3's way, where the header declares the hash (or UNSIGNED-PAYLOAD). Every other service,
    execute-api included, hashes the body it received, so the header is one more signed header
    and the canonical request's last line is always the received body's hash."""

    def __init__(self, credentials: Credentials, region: str, signed: list[str]) -> None:
        super().__init__(credentials, SERVICE, region)
        self._signed = signed

    def headers_to_sign(self, request: AWSRequest) -> Any:
        chosen = super().headers_to_sign(request)
        for name in list(chosen.keys()):
            if name not in self._signed:
                del chosen[name]
        return chosen

    def canonical_request(self, request: AWSRequest) -> str:
        claimed_hash_dropped, _, _ = super().canonical_request(request).rpartition("\n")
        return f"{claimed_hash_dropped}\n{self.payload(request)}"


def verify(
    method: str,
    url: str,
    headers: Mapping[str, str],
    body: bytes,
    region: str,
    secret_of: Callable[[str], str | None],
    now: datetime.datetime,
) -> Signed | Refusal:
    """Whether the request carries a valid SigV4 signature by a key `secret_of` knows (access key
    id -> its secret, or None), for this region and execute-api, made within five minutes of `now`."""
    lowered = {name.lower(): value for name, value in headers.items()}
    authorization = lowered.get("authorization")
    if not authorization:
        return MISSING_TOKEN
    found = _AUTHORIZATION.match(authorization.strip())
    if found is None:
        return incomplete(
            f"Authorization header requires 'Credential', 'SignedHeaders' and 'Signature': {authorization}"
        )
    stamp = lowered.get("x-amz-date", "")
    try:
        signed_at = datetime.datetime.strptime(stamp, TIMESTAMP_FORMAT).replace(tzinfo=datetime.UTC)
    except ValueError:
        return incomplete("Authorization header requires existence of either a 'X-Amz-Date' or a 'Date' header.")
    if signed_at < now - MAX_CLOCK_SKEW:
        return expired(stamp, now)
    if signed_at > now + MAX_CLOCK_SKEW:
        return not_yet_current(stamp, now)
    secret = secret_of(found["key"])
    if secret is None:
        return UNKNOWN_KEY
    if (found["date"], found["region"], found["service"]) != (stamp[:8], region, SERVICE):
        return BAD_SIGNATURE
    signed = found["signed"].split(";")
    if "host" not in signed:
        return BAD_SIGNATURE
    request = AWSRequest(method=method, url=url, data=body, headers={n: v for n, v in lowered.items() if n in signed})
    request.context["timestamp"] = stamp
    token = lowered.get("x-amz-security-token")
    signer = _Recompute(Credentials(found["key"], secret, token), region, signed)
    expected = signer.signature(signer.string_to_sign(request, signer.canonical_request(request)), request)
    if not hmac.compare_digest(expected, found["signature"]):
        return BAD_SIGNATURE
    return Signed(found["key"], token)
