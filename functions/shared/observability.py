"""The one place Logger, Metrics and Tracer are created (service name from POWERTOOLS_SERVICE_NAME)."""

from __future__ import annotations

import logging

from aws_lambda_powertools import Logger, Metrics, Tracer
from aws_lambda_powertools.logging.utils import copy_config_to_registered_loggers

logger = Logger()
metrics = Metrics()
tracer = Tracer()

# The core's loggers (`logging.getLogger(__name__)` under `functions`: a shard grown, dead leases
# settled, a count that failed) write through the same handler, as JSON with the service's keys and
# at its level. Without it their INFO lines were dropped: a Python logger without a handler of its
# own prints only warnings, to stderr.
logging.getLogger("functions")
copy_config_to_registered_loggers(source_logger=logger, include={"functions"})
