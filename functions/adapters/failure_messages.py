"""The record Lambda sends to an on-failure destination when a DynamoDB stream batch is discarded,
read with Powertools' parser model of it (Lambda developer guide, "Retaining discarded batches for
a DynamoDB event source": https://docs.aws.amazon.com/lambda/latest/dg/services-dynamodb-errors.html).

It holds the batch's metadata only: the records themselves are read back from the stream.
"""

from __future__ import annotations

from aws_lambda_powertools.utilities.parser.models import DynamoDBStreamLambdaOnFailureDestinationModel
from pydantic import ValidationError

from functions.core.redrive import StreamBatchInfo


class InvalidFailureMessage(ValueError):
    """A message on a DLQ that is not Lambda's on-failure record of a DynamoDB stream batch."""

    def __init__(self, reason: str) -> None:
        super().__init__(f"not a DynamoDB stream on-failure message: {reason}")


def parse_failure_message(body: str) -> StreamBatchInfo:
    try:
        info = DynamoDBStreamLambdaOnFailureDestinationModel.model_validate_json(body).ddb_stream_batch_info
    except ValidationError as error:
        first = error.errors()[0]
        where = ".".join(str(part) for part in first["loc"]) or "the body"
        raise InvalidFailureMessage(f"{where}: {first['msg']}") from error
    for name, value in (("streamArn", info.stream_arn), ("shardId", info.shard_id)):
        if not value:
            raise InvalidFailureMessage(f"{name} is empty")
    for name, value in (
        ("startSequenceNumber", info.start_sequence_number),
        ("endSequenceNumber", info.end_sequence_number),
    ):
        if not value.isdigit():
            raise InvalidFailureMessage(f"{name} must be a decimal sequence number, got {value!r}")
    if int(info.start_sequence_number) > int(info.end_sequence_number):
        raise InvalidFailureMessage("startSequenceNumber is after endSequenceNumber")
    return StreamBatchInfo(
        stream_arn=info.stream_arn,
        shard_id=info.shard_id,
        start_sequence_number=info.start_sequence_number,
        end_sequence_number=info.end_sequence_number,
        batch_size=info.batch_size,
    )
