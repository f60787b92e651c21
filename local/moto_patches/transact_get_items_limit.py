"""A TransactGetItems reads up to 100 items, as DynamoDB does.

DynamoDB takes "an ordered array of up to 100 TransactGetItem objects"
(https://docs.aws.amazon.com/amazondynamodb/latest/APIReference/API_TransactGetItems.html), and
DynamoDB Local 3.x serves 100 and refuses 101. Upstream
(`moto.dynamodb.responses.TRANSACTION_MAX_ITEMS`) refuses more than 25, DynamoDB's limit before
2022, with a ValidationException. moto's writes already take 100.
"""

from __future__ import annotations

DYNAMODB_TRANSACTION_MAX_ITEMS = 100
UPSTREAM_TRANSACTION_MAX_ITEMS = 25


def apply() -> None:
    from moto.dynamodb import responses

    responses.TRANSACTION_MAX_ITEMS = DYNAMODB_TRANSACTION_MAX_ITEMS
