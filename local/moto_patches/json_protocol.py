"""What the two plain-JSON answers (stream_records_as_json, item_answers_as_json) share: the values
json.dumps cannot write, written as the JSON protocol writes them. Not a change to moto itself."""

from __future__ import annotations

import base64
import datetime
from typing import Any


def as_the_json_protocol_writes_it(value: Any) -> float | str:
    """Times as epoch seconds, binary values in base64, as moto's serializer writes them."""
    from moto.core.serialize import TimestampSerializer

    if isinstance(value, datetime.datetime):
        return TimestampSerializer._timestamp_unixtimestamp(value)
    if isinstance(value, bytes):
        return base64.b64encode(value).decode("ascii")
    raise TypeError(f"{type(value).__name__} is not JSON serializable")
