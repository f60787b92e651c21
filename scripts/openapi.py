"""Write (or, with --check, verify) docs/openapi.json from the api handler's own routes and models."""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path
from typing import Any

from scripts.generated import write_or_check

OPENAPI_FILE = Path(__file__).resolve().parent.parent / "docs" / "openapi.json"


def render() -> str:
    os.environ.setdefault("TABLE_NAME", "unused-for-the-document")
    os.environ.setdefault("POWERTOOLS_TRACE_DISABLED", "true")
    os.environ.setdefault("POWERTOOLS_METRICS_NAMESPACE", "unused-for-the-document")  # read at import
    from aws_lambda_powertools.event_handler.openapi.models import APIKey, APIKeyIn

    from functions.api.handler import app

    # Every method is authorized with IAM: a SigV4-signed Authorization header (docs/security.md),
    # declared as API Gateway's own OpenAPI extension declares it.
    sigv4 = APIKey.model_validate(
        {"name": "Authorization", "in": APIKeyIn.header, "x-amazon-apigateway-authtype": "awsSigv4"}
    )
    document = app.get_openapi_json_schema(
        title="Hybrid counter API",
        version="1.0.0",
        description="Per-account resource limits with a best-effort and an eventual counter (docs/admission.md). "
        "Every request is signed with SigV4 for the service execute-api; a tenant session reaches its own "
        "account's paths only, and only an admin sets a limit (docs/security.md).",
        security_schemes={"sigv4": sigv4},
        security=[{"sigv4": []}],
    )
    return json.dumps(as_answered(json.loads(document)), indent=2, sort_keys=True) + "\n"


def as_answered(document: dict[str, Any]) -> dict[str, Any]:
    """What the API answers, where Powertools' generator says otherwise: it gives a 204 the return
    annotation's body; it lets an optional header or query parameter be null, which a request can
    only send as the text "null" (an absent parameter is one the client leaves out: `required:
    false`); and it adds its own validation error schemas, which no answer of this API uses (a
    validation error is a 400 in the API's envelope, functions/api/errors.py)."""
    for operations in document["paths"].values():
        for operation in operations.values():
            for parameter in operation.get("parameters", []):
                value = parameter["schema"]
                choices = [choice for choice in value.pop("anyOf", []) if choice != {"type": "null"}]
                if len(choices) == 1:
                    value.update(choices[0])
                elif choices:
                    value["anyOf"] = choices
            responses = operation["responses"]
            if "204" in responses:
                responses["204"].pop("content", None)
    from functions.api.models import ATTRIBUTE_VALUE

    schemas = document["components"]["schemas"]
    schemas["AttributeValue"] = ATTRIBUTE_VALUE  # what a create's attributes hold (functions/api/models.py)
    others = {key: value for key, value in document.items() if key != "components"}
    for _ in range(3):  # Powertools' own error schemas refer to each other: drop them outside in
        for name in ("HTTPValidationError", "ValidationError", "ResponseValidationError"):
            referenced = json.dumps([others, {key: value for key, value in schemas.items() if key != name}])
            if f'"#/components/schemas/{name}"' not in referenced:
                schemas.pop(name, None)
    return document


def main() -> int:
    return write_or_check(__doc__, OPENAPI_FILE, render, "openapi")


if __name__ == "__main__":
    sys.exit(main())
