"""Verifies a bearer JWT against its OIDC issuer (PyJWT): the signature by a key of the issuer's
JWKS, found through the issuer's discovery document, then `iss`, `aud`, `exp` and `nbf`."""

from __future__ import annotations

import json
import urllib.request
from typing import Any

import jwt

# Signing algorithms accepted: asymmetric only, so a token can never be signed with a public key
# taken for an HMAC secret (the "alg confusion" attack), and never "none".
ALGORITHMS = ["RS256", "RS384", "RS512", "ES256", "ES384", "PS256"]
LEEWAY_SECONDS = 30  # clock skew allowed on exp and nbf
JWKS_CACHE_SECONDS = 3600
FETCH_TIMEOUT_SECONDS = 5


class InvalidToken(Exception):
    """The token is not one this API accepts: API Gateway answers 401."""


class JwtVerifier:
    def __init__(self, issuer: str, audience: str) -> None:
        # Compared with `iss` exactly, a final "/" included (OpenID Connect Core 1.0, 3.1.3.7):
        # Auth0's issuers end in "/", Cognito's do not.
        self._issuer = issuer
        self._audience = audience
        self._keys: jwt.PyJWKClient | None = None

    def claims(self, token: str) -> dict[str, Any]:
        try:
            key = self._key_set().get_signing_key_from_jwt(token)
            claims: dict[str, Any] = jwt.decode(
                token,
                key.key,
                algorithms=ALGORITHMS,
                audience=self._audience,
                issuer=self._issuer,
                leeway=LEEWAY_SECONDS,
                options={"require": ["exp", "iss", "aud", "sub"]},
            )
        except jwt.PyJWTError as error:
            raise InvalidToken(str(error)) from error
        return claims

    def _key_set(self) -> jwt.PyJWKClient:
        """The issuer's keys, from the `jwks_uri` of its discovery document (read once per
        execution environment; PyJWKClient refetches the keys when a token names an unknown kid)."""
        if self._keys is None:
            # The issuer without its final "/", then the well-known path (OpenID Connect Discovery 1.0, 4).
            discovery = f"{self._issuer.rstrip('/')}/.well-known/openid-configuration"
            with urllib.request.urlopen(discovery, timeout=FETCH_TIMEOUT_SECONDS) as answer:  # noqa: S310 - the issuer is configured
                jwks_uri = json.load(answer)["jwks_uri"]
            self._keys = jwt.PyJWKClient(jwks_uri, lifespan=JWKS_CACHE_SECONDS, timeout=FETCH_TIMEOUT_SECONDS)
        return self._keys
