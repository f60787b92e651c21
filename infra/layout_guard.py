"""What an upgrade must keep of the deployed stack: the stateful resources' identity and the
table's shape, as a small JSON document (infra/released_layout.json holds the last release's).

CloudFormation replaces a table whose logical id or key schema changes (a new, empty table), and
DynamoDB creates or deletes one global secondary index per UpdateTable, so a deploy may change at
most one GSI. tests/infra/test_upgrade.py compares today's template with the release's.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

STATEFUL_TYPES = ("AWS::DynamoDB::Table", "AWS::SQS::Queue", "AWS::Logs::LogGroup")


def layout_of(template: Mapping[str, Any]) -> dict[str, Any]:
    """The parts of a synthesized template an upgrade must not break."""
    resources = template["Resources"]
    stateful = sorted(name for name, r in resources.items() if r["Type"] in STATEFUL_TYPES)
    [(table_id, table)] = [(name, r) for name, r in resources.items() if r["Type"] == "AWS::DynamoDB::Table"]
    properties = table["Properties"]
    return {
        "stateful": stateful,
        "table": {
            "logicalId": table_id,
            "keySchema": properties["KeySchema"],
            "attributes": sorted(properties["AttributeDefinitions"], key=lambda a: a["AttributeName"]),
            "stream": properties.get("StreamSpecification"),
            "ttl": properties.get("TimeToLiveSpecification"),
            "indexes": {
                index["IndexName"]: {"keySchema": index["KeySchema"], "projection": index["Projection"]}
                for index in properties.get("GlobalSecondaryIndexes", [])
            },
        },
    }


def upgrade_problems(released: Mapping[str, Any], current: Mapping[str, Any]) -> list[str]:
    """Why deploying `current` over a stack at `released` would lose or break data; [] if it is safe."""
    problems = []
    was, now = released["table"], current["table"]
    if was["logicalId"] != now["logicalId"]:
        problems.append(f"the table's logical id changed ({was['logicalId']} -> {now['logicalId']}): a new table")
    if was["keySchema"] != now["keySchema"]:
        problems.append("the table's key schema changed: CloudFormation replaces the table")
    if was["stream"] != now["stream"]:
        problems.append("the stream's view type changed: a new stream, and the consumer loses its place")
    if was["ttl"] != now["ttl"]:
        problems.append("the TTL attribute changed: tombstones and rate windows would never expire")
    gone = sorted(set(was["indexes"]) - set(now["indexes"]))
    added = sorted(set(now["indexes"]) - set(was["indexes"]))
    changed = sorted(
        name for name in set(was["indexes"]) & set(now["indexes"]) if was["indexes"][name] != now["indexes"][name]
    )
    if changed:
        problems.append(f"index(es) {changed} changed in place: delete and re-add them in two deploys")
    if len(gone) + len(added) > 1:
        problems.append(f"more than one index added or removed ({added}, {gone}): DynamoDB takes one per deploy")
    lost = sorted(set(released["stateful"]) - set(current["stateful"]))
    if lost:
        problems.append(f"stateful resources renamed or removed: {lost} (their data stays behind, retained)")
    return problems
