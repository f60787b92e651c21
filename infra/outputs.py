"""What tests, tools and callers read of a deployed stack: its name, its outputs (top-level
CfnOutputs, so each logical id is exactly the name; infra/stack.py writes them) and the session tag
that names a tenant role session's account (docs/security.md).

No CDK here: `python -m ops`, the local runtime and the scripts read these without loading it.
"""

from __future__ import annotations

from typing import Final

DEFAULT_STACK_NAME: Final = "HybridCounter"

TENANT_TAG_KEY: Final = "tenant"

OUTPUT_API_URL: Final = "ApiUrl"
OUTPUT_TABLE_NAME: Final = "TableName"
OUTPUT_STREAM_ARN: Final = "StreamArn"
OUTPUT_DLQ1_URL: Final = "Dlq1Url"
OUTPUT_DLQ2_URL: Final = "Dlq2Url"
OUTPUT_DLQ1_ARN: Final = "Dlq1Arn"
OUTPUT_DLQ2_ARN: Final = "Dlq2Arn"
OUTPUT_DLQ2_ALARM_NAME: Final = "Dlq2AlarmName"
OUTPUT_TENANT_ROLE_ARN: Final = "TenantRoleArn"
OUTPUT_ADMIN_ROLE_ARN: Final = "AdminRoleArn"
OUTPUT_TENANT_TAG_KEY: Final = "TenantTagKey"
OUTPUT_ALARM_TOPIC_ARN: Final = "AlarmTopicArn"
OUTPUT_DASHBOARD_NAME: Final = "DashboardName"
OUTPUT_SWEEPER_FUNCTION: Final = "SweeperFunctionName"
OUTPUT_EVENT_BUS_NAME: Final = "EventBusName"
OUTPUT_EVENT_BUS_ARN: Final = "EventBusArn"
OUTPUT_EVENTS_DLQ_URL: Final = "EventsDlqUrl"
OUTPUT_EVENTS_DLQ_ALARM_NAME: Final = "EventsDlqAlarmName"
OUTPUT_EVENTS_LOG_GROUP: Final = "EventsLogGroupName"
OUTPUT_REFUSALS_DLQ_URL: Final = "RefusalsDlqUrl"
OUTPUT_REFUSAL_AGGREGATOR_FUNCTION: Final = "RefusalAggregatorFunctionName"
