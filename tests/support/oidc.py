"""A minimal OIDC issuer for tests: its discovery document and JWKS over real HTTP on 127.0.0.1,
and tokens signed with its RSA key (or another key, to forge one).

Its identifier (`url`, the tokens' `iss`) may end in a path, `/` alone included, as Auth0's
(`https://TENANT.auth0.com/`) does; its discovery document is then at the identifier without its
final `/`, plus `/.well-known/openid-configuration` (OpenID Connect Discovery 1.0, section 4)."""

from __future__ import annotations

import json
import threading
import time
import uuid
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

import jwt
from cryptography.hazmat.primitives.asymmetric import rsa


def new_key() -> rsa.RSAPrivateKey:
    return rsa.generate_private_key(public_exponent=65537, key_size=2048)


class OidcIssuer:
    def __init__(self, path: str = "") -> None:
        self.key = new_key()
        self.key_id = uuid.uuid4().hex
        issuer = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, format: str, *args: Any) -> None:
                return

            def do_GET(self) -> None:
                if self.path == f"{base}/.well-known/openid-configuration":
                    body = {"issuer": issuer.url, "jwks_uri": f"{origin}{base}/jwks.json"}
                elif self.path == f"{base}/jwks.json":
                    public = json.loads(jwt.algorithms.RSAAlgorithm.to_jwk(issuer.key.public_key()))
                    body = {"keys": [{**public, "kid": issuer.key_id, "use": "sig", "alg": "RS256"}]}
                else:
                    self.send_error(404)
                    return
                raw = json.dumps(body).encode()
                self.send_response(200)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(raw)))
                self.end_headers()
                self.wfile.write(raw)

        self._server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        origin, base = f"http://127.0.0.1:{self._server.server_port}", path.rstrip("/")
        self.url = f"{origin}{path}"
        self._thread = threading.Thread(target=self._server.serve_forever, daemon=True)

    def __enter__(self) -> OidcIssuer:
        self._thread.start()
        return self

    def __exit__(self, *_: object) -> None:
        self._server.shutdown()
        self._server.server_close()

    def token(
        self,
        audience: str,
        key: rsa.RSAPrivateKey | None = None,
        lifetime_seconds: int = 300,
        **claims: Any,
    ) -> str:
        now = int(time.time())
        payload = {"iss": self.url, "aud": audience, "sub": uuid.uuid4().hex, "iat": now, "exp": now + lifetime_seconds}
        return jwt.encode({**payload, **claims}, key or self.key, algorithm="RS256", headers={"kid": self.key_id})
