"""The client against the API's own documents: every operation of docs/openapi.json has a client
method, with its method, path, parameters and success statuses; every response schema is a
dataclass of the same fields and types; every error code the document or docs/security.md's
table of answers lists is an exception class of its status family, retried exactly when the
table says a client retries it. When either side changes alone, a test here fails."""

from __future__ import annotations

import dataclasses
import inspect
import json
import re
import types
import typing
from collections.abc import Iterator, Mapping
from pathlib import Path
from typing import Any

import pytest
from hybrid_counter_client import AsyncLimitsClient, LimitsClient
from hybrid_counter_client.errors import (
    ERRORS_BY_CODE,
    ClientError,
    HybridCounterError,
    ServerError,
    TooManyRequests,
    family_of,
)
from hybrid_counter_client.models import json_name
from hybrid_counter_client.operations import ARGUMENT_NAMES, OPERATIONS, PATH_PATTERNS

ROOT = Path(__file__).resolve().parents[2]
DOCUMENT = json.loads((ROOT / "docs" / "openapi.json").read_text(encoding="utf-8"))
SECURITY = (ROOT / "docs" / "security.md").read_text(encoding="utf-8")
CLIENTS = (LimitsClient, AsyncLimitsClient)
BY_ID = {operation.operation_id: operation for operation in OPERATIONS}


def documented_operations() -> Iterator[tuple[str, str, str, dict[str, Any]]]:
    """Every operation of the document."""
    for path, methods in DOCUMENT["paths"].items():
        for method, operation in methods.items():
            yield operation["operationId"], method.upper(), path, operation


def resolved(schema: dict[str, Any]) -> dict[str, Any]:
    while "$ref" in schema:
        schema = DOCUMENT["components"]["schemas"][schema["$ref"].rsplit("/", 1)[-1]]
    return schema


def snake(name: str) -> str:
    """The document's names as the client's arguments: `accountId` and `if-match` are `account_id`
    and `if_match`."""
    return re.sub(r"(?<=[a-z])(?=[A-Z])", "_", name).replace("-", "_").lower()


def test_every_operation_has_a_method_of_both_clients_with_its_path_and_success_statuses() -> None:
    documented = {(op_id, method, path) for op_id, method, path, _ in documented_operations()}
    assert documented == {(each.operation_id, each.method, each.path) for each in OPERATIONS}
    for op_id, _, _, operation in documented_operations():
        successes = {int(status) for status in operation["responses"] if status.startswith("2")}
        assert successes == BY_ID[op_id].success, op_id
        for client in CLIENTS:
            assert callable(getattr(client, BY_ID[op_id].client_method, None)), (client, op_id)


def python_type_matches(annotation: Any, schema: dict[str, Any], where: str, request: bool = False) -> None:
    """`annotation` is what `schema` describes: nullable is `| None`, integer `int`, string `str`,
    an open object `dict[str, Any]` (a `Mapping` in a request), an array a `list`, a schema of
    named properties the dataclass checked field by field."""
    choices = schema.get("anyOf")
    if choices is not None:
        nullable = {"type": "null"} in choices
        rest = [choice for choice in choices if choice != {"type": "null"}]
        assert nullable, f"{where}: {schema}"
        assert len(rest) == 1, f"{where}: {schema}"
        arguments = typing.get_args(annotation)
        assert typing.get_origin(annotation) in (typing.Union, types.UnionType), f"{where}: {annotation} not nullable"
        assert type(None) in arguments, f"{where}: {annotation} not nullable"
        (inner,) = [argument for argument in arguments if argument is not type(None)]
        python_type_matches(inner, rest[0], where, request)
        return
    schema = resolved(schema)
    kind = schema.get("type")
    if kind == "object" and "properties" in schema:
        assert dataclasses.is_dataclass(annotation), f"{where}: {annotation} is not a dataclass for {schema['title']}"
        dataclass_matches(annotation, schema, {}, where)
    elif kind == "object":
        assert typing.get_origin(annotation) in ((dict, Mapping) if request else (dict,)), f"{where}: {annotation}"
        assert typing.get_args(annotation) == (str, Any), f"{where}: {annotation}"
    elif kind == "array":
        assert typing.get_origin(annotation) is list, f"{where}: {annotation}"
        python_type_matches(typing.get_args(annotation)[0], schema["items"], f"{where}[]", request)
    else:
        assert annotation is {"integer": int, "string": str}[kind], f"{where}: {annotation} is not {kind}"


def dataclass_matches(model: Any, schema: dict[str, Any], headers: dict[str, Any], where: str) -> None:
    hints = typing.get_type_hints(model)
    fields = dataclasses.fields(model)
    body_fields = {json_name(each.name): each for each in fields if "header" not in each.metadata}
    header_fields = {each.metadata["header"]: each for each in fields if "header" in each.metadata}
    properties = schema["properties"]
    assert set(body_fields) == set(properties), f"{where}: {model.__name__} vs {schema['title']}"
    # Every header the answer documents is a field; a header field the answer does not document
    # is one the model has from other answers (a resource's ETag, which its read and its resize
    # send and a create or a page does not), so it defaults to None there.
    assert set(headers) <= set(header_fields), f"{where}: {model.__name__}'s headers"
    for name, each in body_fields.items():
        python_type_matches(hints[each.name], properties[name], f"{where}.{name}")
        required = name in schema.get("required", [])
        has_default = each.default is not dataclasses.MISSING
        assert required != has_default, f"{where}.{name}: required {required}, default {has_default}"
    for name, each in header_fields.items():
        if each.default is dataclasses.MISSING:
            assert name in headers, f"{where}: {model.__name__}.{each.name} is header {name}, which it never has"
            python_type_matches(hints[each.name], headers[name]["schema"], f"{where} header {name}")
        else:
            assert each.default is None, f"{where}: {model.__name__}.{each.name}"
            schema_or_none = {"anyOf": [headers.get(name, {}).get("schema", {"type": "string"}), {"type": "null"}]}
            python_type_matches(hints[each.name], schema_or_none, f"{where} header {name}")


def test_every_success_answer_is_the_dataclass_its_method_returns() -> None:
    for op_id, _, _, operation in documented_operations():
        for client in CLIENTS:
            method = getattr(client, BY_ID[op_id].client_method)
            returned = typing.get_type_hints(method)["return"]
            for status, answer in operation["responses"].items():
                if not status.startswith("2"):
                    continue
                content = answer.get("content")
                if content is None:
                    assert returned is type(None), f"{op_id} {status} has no body; {method} returns {returned}"
                    continue
                schema = resolved(content["application/json"]["schema"])
                assert dataclasses.is_dataclass(returned), f"{op_id} {status}: {returned} for {schema['title']}"
                dataclass_matches(returned, schema, answer.get("headers", {}), f"{op_id} {status}")


def test_every_header_field_is_a_header_some_answer_of_its_model_documents() -> None:
    """A header field defaults to None where an answer does not send it: some answer must."""
    models: set[Any] = set()
    sent: set[tuple[Any, str]] = set()
    for op_id, _, _, operation in documented_operations():
        returned = typing.get_type_hints(getattr(LimitsClient, BY_ID[op_id].client_method))["return"]
        if not dataclasses.is_dataclass(returned):
            continue
        models.add(returned)
        for status, answer in operation["responses"].items():
            if status.startswith("2"):
                sent.update((returned, header) for header in answer.get("headers", {}))
    for model in models:
        for each in dataclasses.fields(model):
            if "header" in each.metadata:
                assert (model, each.metadata["header"]) in sent, f"{model.__name__}.{each.name}"


def test_every_parameter_and_body_property_is_an_argument_of_its_method() -> None:
    for op_id, _, _, operation in documented_operations():
        documented: dict[str, tuple[dict[str, Any], bool]] = {
            snake(parameter["name"]): (parameter["schema"], parameter.get("required", False))
            for parameter in operation.get("parameters", [])
        }
        body = operation.get("requestBody")
        if body is not None:
            schema = resolved(body["content"]["application/json"]["schema"])
            for name, property_schema in schema["properties"].items():
                documented[snake(name)] = (property_schema, name in schema.get("required", []))
        for client in CLIENTS:
            method = getattr(client, BY_ID[op_id].client_method)
            hints = typing.get_type_hints(method)
            arguments = {
                name: argument for name, argument in inspect.signature(method).parameters.items() if name != "self"
            }
            assert set(arguments) == set(documented), f"{client.__name__}.{method.__name__} vs {op_id}"
            for name, (schema, required) in documented.items():
                has_default = arguments[name].default is not inspect.Parameter.empty
                assert required != has_default, f"{op_id} {name}: required {required}, default {has_default}"
                annotation = hints[name]
                if not required:  # an optional argument is `X | None = None`: left out, not sent
                    assert arguments[name].default is None, f"{op_id} {name}"
                    annotation = typing.Optional[annotation]  # noqa: UP045 - as typing reads `X | None`
                    schema = schema if "anyOf" in schema else {"anyOf": [schema, {"type": "null"}]}
                python_type_matches(annotation, schema, f"{op_id} {name}", request=True)


# A code in an error answer's description: a name of several capitalised words (LimitExceeded), or
# one capitalised word followed by its explanation in parentheses (Throttled (the stage's limit)).
DESCRIBED_CODE = re.compile(r"\b[A-Z][a-z]+(?:[A-Z][a-z]+)+\b|\b[A-Z][a-z]+(?= \()")


def codes_in_document() -> dict[str, set[int]]:
    codes: dict[str, set[int]] = {}
    for *_, operation in documented_operations():
        for status, answer in operation["responses"].items():
            if int(status) >= 400:
                for code in DESCRIBED_CODE.findall(answer["description"]):
                    codes.setdefault(code, set()).add(int(status))
    return codes


@dataclasses.dataclass(frozen=True)
class Row:
    statuses: tuple[int, ...]  # several for "other 4xx / 5xx"
    codes: tuple[str, ...]
    retry: str


def table_of_answers() -> list[Row]:
    """docs/security.md, "Every answer a client can get": status | `error.code` | who | when | retry."""
    section = SECURITY.split("## Every answer a client can get", 1)[1].split("\n## ", 1)[0]
    rows = []
    for line in section.splitlines():
        cells = [cell.strip() for cell in line.strip().strip("|").split("|")]
        if len(cells) != 5 or not re.match(r"\d|other", cells[0]) or cells[0].startswith("200"):
            continue
        # Backticked names in the code cell, but for headers (`Retry-After`, "with `Allow`").
        codes = tuple(re.findall(r"(?<!with )`([A-Z][A-Za-z]+)`", cells[1]))
        statuses = (400, 500) if cells[0] == "other 4xx / 5xx" else (int(cells[0]),)
        rows.append(Row(statuses, codes, cells[4]))
    assert len(rows) > 20, "docs/security.md's table of answers was not found"
    return rows


def expected_family(status: int) -> type[HybridCounterError]:
    return family_of(status)


def test_every_error_code_is_an_exception_class_of_its_status_family() -> None:
    documented = codes_in_document()
    for row in table_of_answers():
        for code in row.codes:
            documented.setdefault(code, set())
        if row.statuses == (400, 500):  # "other 4xx / 5xx": `RequestRefused` / `InternalError`
            documented[row.codes[0]].add(400)
            documented[row.codes[1]].add(500)
        else:
            for code in row.codes:
                documented[code].update(row.statuses)
    missing = sorted(set(documented) - set(ERRORS_BY_CODE))
    assert not missing, f"codes the documents list without an exception class: {missing}"
    unlisted = sorted(set(ERRORS_BY_CODE) - set(documented))
    assert not unlisted, f"exception classes of codes neither document lists: {unlisted}"
    for code, statuses in documented.items():
        for status in statuses:
            family = expected_family(status)
            assert issubclass(ERRORS_BY_CODE[code], family), f"{code} answered {status} is not a {family.__name__}"
            if family is ClientError:
                assert not issubclass(ERRORS_BY_CODE[code], TooManyRequests), code


# The table's "Retry" column, in its own words: what the client does on its own.
RETRIED_BY_THE_CLIENT = ("after `Retry-After`", "idempotently")
LEFT_TO_THE_CALLER = ("no", "with a new token", "with new credentials", "once a delete", "after reading the account")


@pytest.mark.parametrize("row", table_of_answers(), ids=lambda row: "/".join(row.codes))
def test_the_client_retries_exactly_what_the_table_says_to_retry(row: Row) -> None:
    if row.retry.startswith("as the status says"):  # other 4xx / 5xx: "4xx no, 5xx idempotently"
        refused, failed = (ERRORS_BY_CODE[code] for code in row.codes)
        assert (refused.retryable, failed.retryable) == (False, True)
        return
    retried = row.retry.startswith(RETRIED_BY_THE_CLIENT)
    assert retried or row.retry.startswith(LEFT_TO_THE_CALLER), f"new wording in the Retry column: {row.retry!r}"
    for code in row.codes:
        assert ERRORS_BY_CODE[code].retryable == retried, f"{code}: the table says {row.retry!r}"
    for status in row.statuses:  # an unknown code of the same status is retried alike
        assert family_of(status).retryable == retried or status == 400, status


def test_a_5xx_is_a_server_error_and_a_429_too_many_requests() -> None:
    assert issubclass(TooManyRequests, ClientError)
    assert ServerError.retryable
    assert TooManyRequests.retryable
    assert not ClientError.retryable


def test_the_client_s_path_patterns_are_the_document_s() -> None:
    """The client refuses a path value its own table's pattern does not take (operations.py,
    PATH_PATTERNS): that table is every path parameter's pattern in the document, exactly."""
    documented: dict[str, set[str]] = {}
    for _, _, path, operation in documented_operations():
        for parameter in operation.get("parameters", []):
            if parameter["in"] == "path":
                documented.setdefault(parameter["name"], set()).add(parameter["schema"]["pattern"])
                assert f"{{{parameter['name']}}}" in path, (path, parameter["name"])
    assert documented == {name: {pattern} for name, pattern in PATH_PATTERNS.items()}
    assert set(ARGUMENT_NAMES) == set(PATH_PATTERNS)
    assert all(snake(name) == argument for name, argument in ARGUMENT_NAMES.items())
