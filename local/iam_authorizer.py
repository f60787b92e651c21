"""API Gateway's `AWS_IAM` authorization, locally: a valid SigV4 signature by a known caller, then
`execute-api:Invoke` allowed on the method's ARN by the policies of the caller's role, read from
the deployed stack (so a change to infra/access.py changes what the local gateway allows). A
refused request never reaches the function (API Gateway developer guide, "Control access to a REST
API with IAM permissions")."""

from __future__ import annotations

import datetime
import hmac
import logging
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from local.iam_policy import UnsupportedPolicy, allowed, execute_api_arn
from local.sessions import Session, Sessions
from local.sigv4 import EXPIRED_TOKEN, UNKNOWN_KEY, Refusal, Signed, request_path, utc_now, verify

logger = logging.getLogger("local.runtime")
# A policy the local evaluator does not implement: refused as API Gateway answers a failure of its own.
CONFIGURATION_ERROR = Refusal("API_CONFIGURATION_ERROR", 500, "Internal server error")


@dataclass(frozen=True)
class Caller:
    """Who an allowed request came from, as API Gateway puts it in `requestContext.identity`."""

    identity: Session
    user_arn: str
    account_id: str

    @property
    def principal(self) -> str:
        """`caller` and `user`: AWS gives the role's id and the session name (AROA...:session);
        the role's name stands in for its id here."""
        _, role, session = self.user_arn.rsplit(":", 1)[-1].split("/")
        return f"{role}:{session}"


@dataclass
class IamAuthorizer:
    identities: Sessions
    policies: Mapping[str, Sequence[Mapping[str, Any]]]  # a session's role -> its policy documents
    role_arns: Mapping[str, str]  # role -> ARN
    region: str
    account_id: str
    api_id: str
    stage: str
    # What a signature's date and a session's expiry are checked against.
    clock: Callable[[], datetime.datetime] = utc_now

    def check(self, method: str, raw_path: str, headers: Mapping[str, str], body: bytes) -> Caller | Refusal:
        host = next((value for name, value in headers.items() if name.lower() == "host"), "localhost")
        now = self.clock()
        signed = verify(method, f"http://{host}{raw_path}", headers, body, self.region, self.identities.secret_of, now)
        if not isinstance(signed, Signed):
            return signed
        identity = self.identities.find(signed.access_key_id)
        if identity is None or not hmac.compare_digest(signed.session_token or "", identity.session_token):
            return UNKNOWN_KEY
        if now >= identity.expiration:
            return EXPIRED_TOKEN
        role_arn = self.role_arns[identity.role]
        user_arn = f"arn:aws:sts::{self.account_id}:assumed-role/{role_arn.rsplit('/', 1)[-1]}/{identity.session_name}"
        path = request_path(raw_path)
        resource = execute_api_arn(self.region, self.account_id, self.api_id, self.stage, method, path)
        try:
            permitted = allowed(self.policies.get(identity.role, ()), "execute-api:Invoke", resource, identity.tags)
        except UnsupportedPolicy:
            logger.exception("the local gateway cannot evaluate %s's policy", role_arn)
            return CONFIGURATION_ERROR
        if not permitted:
            message = f"User: {user_arn} is not authorized to perform: execute-api:Invoke on resource: {resource}"
            return Refusal("ACCESS_DENIED", 403, message, message_key="Message")
        return Caller(identity, user_arn, self.account_id)
