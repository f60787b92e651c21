"""The record Lambda sends to an SQS on-failure destination when a stream batch exhausts its retries."""

from __future__ import annotations

import json
from typing import Any


def on_failure_message(stream_arn: str, shard_id: str, start: str, end: str, batch_size: int, **overrides: Any) -> str:
    """Metadata only, as AWS sends it: the records themselves must be read back from the stream."""
    info = {
        "shardId": shard_id,
        "startSequenceNumber": start,
        "endSequenceNumber": end,
        "approximateArrivalOfFirstRecord": "2026-11-22T00:00:00Z",
        "approximateArrivalOfLastRecord": "2026-11-22T00:00:01Z",
        "batchSize": batch_size,
        "streamArn": stream_arn,
        **overrides,
    }
    return json.dumps(
        {
            "requestContext": {
                "requestId": "316aa6d0-8154-4c1a-9af7-85d5f4a6bc81",
                "functionArn": "arn:aws:lambda:us-east-1:000000000000:function:consumer",
                "condition": "RetryAttemptsExhausted",
                "approximateInvokeCount": 6,
            },
            "responseContext": {"statusCode": 200, "executedVersion": "$LATEST", "functionError": "Unhandled"},
            "version": "1.0",
            "timestamp": "2026-11-22T00:00:05.000Z",
            "DDBStreamBatchInfo": info,
        }
    )
