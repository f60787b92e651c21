"""The rollout queue (functions/core/rollout.py): the pager's and the worker's messages, sent in
batches of ten (SQS's SendMessageBatch), each batch's failures raised so the sender is retried."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from functions.core.errors import StoreUnavailable
from functions.core.rollout import Message, message_body

SEND_BATCH = 10  # SendMessageBatch's most entries


class SqsRolloutQueue:
    def __init__(self, sqs: Any, queue_url: str) -> None:
        self.sqs = sqs
        self.queue_url = queue_url

    def send(self, messages: Sequence[Message]) -> None:
        for start in range(0, len(messages), SEND_BATCH):
            batch = messages[start : start + SEND_BATCH]
            entries = [{"Id": str(index), "MessageBody": message_body(m)} for index, m in enumerate(batch)]
            answer = self.sqs.send_message_batch(QueueUrl=self.queue_url, Entries=entries)
            if answer.get("Failed"):
                # A retry sends the batch again: a message sent twice is applied once (rollout.py).
                raise StoreUnavailable(
                    f"rollout queue: {len(answer['Failed'])} messages not sent", may_have_landed=True
                )
