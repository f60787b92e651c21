"""The one place Logger, Metrics and Tracer are created (service name from POWERTOOLS_SERVICE_NAME)."""

from __future__ import annotations

from aws_lambda_powertools import Logger, Metrics, Tracer

logger = Logger()
metrics = Metrics()
tracer = Tracer()
