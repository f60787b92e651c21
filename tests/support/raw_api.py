"""The integration tier's raw HTTP path to the API (local/http_client.py), beside the product's
client (`System.client`), for what a test must send or see that the client does not: hostile and
malformed requests it refuses to send, the exact status of an answer it reads as a result (a
replay's 200 against a 201), headers, routes and methods outside the contract, and IAM's own
answers to unsigned or foreign signatures."""

from __future__ import annotations

import uuid
from typing import Any

from local.http_client import HttpApi, Reply


class RawApi(HttpApi):
    """The API over raw HTTP, with the calls the tests make most by name."""

    def new_account(self, prefix: str = "it", limit: int = 10) -> str:
        """A fresh account per test, so tests never see each other's resources."""
        account_id = f"{prefix}-{uuid.uuid4().hex[:12]}"
        reply = self.request("PUT", f"/accounts/{account_id}", {"limit": limit})
        assert reply.status == 200, reply.body
        return account_id

    def account(self, account_id: str) -> dict[str, Any]:
        reply = self.request("GET", f"/accounts/{account_id}")
        assert reply.status == 200, reply.body
        return reply.body  # type: ignore[no-any-return]

    def create(self, account_id: str, name: str = "r", key: str | None = None) -> Reply:
        headers = {"Idempotency-Key": key} if key else None
        return self.request("POST", f"/accounts/{account_id}/resources", {"name": name}, headers)

    def delete(self, account_id: str, resource_id: str) -> Reply:
        return self.request("DELETE", f"/accounts/{account_id}/resources/{resource_id}")
