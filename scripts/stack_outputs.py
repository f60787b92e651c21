"""Print one output of a deployed stack (AWS, or LocalStack with AWS_ENDPOINT_URL set).

python scripts/stack_outputs.py ApiUrl [--stack-name HybridCounter]
"""

from __future__ import annotations

import argparse
import sys

import boto3

from infra.outputs import DEFAULT_STACK_NAME


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("output", help="output key, e.g. ApiUrl")
    parser.add_argument("--stack-name", default=DEFAULT_STACK_NAME)
    args = parser.parse_args()
    stack = boto3.client("cloudformation").describe_stacks(StackName=args.stack_name)["Stacks"][0]
    for output in stack.get("Outputs", []):
        if output["OutputKey"] == args.output:
            print(output["OutputValue"])
            return 0
    print(f"stack {args.stack_name} has no output {args.output}", file=sys.stderr)
    return 1


if __name__ == "__main__":
    sys.exit(main())
