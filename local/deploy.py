"""Deploys the synthesized CDK template into an emulator with CloudFormation, as `cdk deploy` would.

The same template as the real deployment, so there is no second definition of the infrastructure.
Beforehand, this module provides what CDK's bootstrap provides: the bootstrap version parameter,
and the asset bucket holding each Lambda package.
"""

from __future__ import annotations

import contextlib
import fnmatch
import hashlib
import io
import json
import os
import subprocess
import sys
import zipfile
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

from botocore.exceptions import ClientError

from infra.layout import EXCLUDED_PATTERNS, FUNCTIONS_DIR, FUNCTIONS_PACKAGE, REPO_ROOT

BOOTSTRAP_VERSION_PARAMETER = "/cdk-bootstrap/hnb659fds/version"
BOOTSTRAP_VERSION = "30"


# Synthesized templates, by what they were made from (`make run` and the tests start the runtime
# many times over the same sources; a synthesis costs about 10 s of CPU).
SYNTH_CACHE_DIR = REPO_ROOT / ".local" / "synth"
SYNTH_CACHE_KEPT = 16
# What a template is made from, besides the context: the CDK app, its settings and pinned versions,
# the infrastructure code, and the functions' sources (the asset's hash is theirs).
SYNTH_INPUT_FILES = ("app.py", "cdk.json", "requirements.txt", "package-lock.json")
SYNTH_INPUT_FOLDERS = ("infra", FUNCTIONS_PACKAGE)


def synthesis_key(context: Mapping[str, str] | None = None, root: Path = REPO_ROOT) -> str:
    """A digest of the context and of every input file's path and bytes: a change to any is a new key."""
    digest = hashlib.sha256(json.dumps(dict(context or {}), sort_keys=True).encode())
    files = [root / name for name in SYNTH_INPUT_FILES]
    for folder in SYNTH_INPUT_FOLDERS:
        files += [
            path
            for path in (root / folder).rglob("*")
            if path.is_file()
            and not any(
                fnmatch.fnmatch(part, pattern) for part in path.relative_to(root).parts for pattern in EXCLUDED_PATTERNS
            )
        ]
    for path in sorted(files):
        digest.update(str(path.relative_to(root)).encode() + b"\0")
        digest.update(path.read_bytes() if path.exists() else b"<missing>")
        digest.update(b"\0")
    return digest.hexdigest()[:32]


def synthesize(context: Mapping[str, str] | None = None, cache_dir: Path | None = SYNTH_CACHE_DIR) -> dict[str, Any]:
    """The stack's template with `context` over cdk.json's: from `cache_dir` when the same inputs
    were synthesized before (None: always synthesize), else synthesized and kept there."""
    if cache_dir is None:
        return synthesize_in_child(context)
    cached = cache_dir / f"{synthesis_key(context)}.json"
    if cached.exists():
        template: dict[str, Any] = json.loads(cached.read_text(encoding="utf-8"))
        return template
    template = synthesize_in_child(context)
    cache_dir.mkdir(parents=True, exist_ok=True)
    written = cached.with_name(f"{cached.name}.{os.getpid()}.tmp")  # whole or absent, for other processes
    written.write_text(json.dumps(template), encoding="utf-8")
    written.replace(cached)
    _forget_all_but_the_newest(cache_dir, SYNTH_CACHE_KEPT)
    return template


def _forget_all_but_the_newest(cache_dir: Path, kept: int) -> None:
    """Every edit makes a new template: keep the cache from growing without end."""
    templates = []
    for path in cache_dir.glob("*.json"):
        with contextlib.suppress(FileNotFoundError):  # another process may be pruning too
            templates.append((path.stat().st_mtime, path))
    for _, stale in sorted(templates, reverse=True)[kept:]:
        stale.unlink(missing_ok=True)


def synthesize_in_child(context: Mapping[str, str] | None = None) -> dict[str, Any]:
    """The stack's template with `context` over cdk.json's, synthesized in a child process.

    CDK runs a Node process behind the Python app. Keeping it out of the long-running runtime means
    Ctrl-C, which the terminal sends to the whole process group, has no Node process left here to
    break on the way out.
    """
    script = (
        "import json, sys; from infra.synth import synthesize_stack_template; "
        "json.dump(synthesize_stack_template(json.loads(sys.argv[1])), sys.stdout)"
    )
    completed = subprocess.run(
        [sys.executable, "-c", script, json.dumps(dict(context or {}))],
        cwd=REPO_ROOT,
        capture_output=True,
        text=True,
        check=False,
    )
    if completed.returncode != 0:
        raise RuntimeError(f"cdk synthesis failed:\n{completed.stderr}")
    template: dict[str, Any] = json.loads(completed.stdout)
    return template


def package_functions(functions_dir: Path = FUNCTIONS_DIR) -> bytes:
    """A zip of the functions package (the emulator stores the code; the local runtime runs it)."""
    excluded_folders = {pattern for pattern in EXCLUDED_PATTERNS if "*" not in pattern}
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w", zipfile.ZIP_DEFLATED) as archive:
        for path in sorted(functions_dir.rglob("*.py")):
            relative = path.relative_to(functions_dir)
            if not excluded_folders & set(relative.parts):
                archive.write(path, f"{FUNCTIONS_PACKAGE}/{relative}")
    return buffer.getvalue()


def _substitute(value: Any, account: str, region: str) -> str:
    if isinstance(value, str):
        return value
    if isinstance(value, Mapping) and "Fn::Sub" in value:
        return str(value["Fn::Sub"]).replace("${AWS::AccountId}", account).replace("${AWS::Region}", region)
    raise ValueError(f"cannot resolve asset location {value!r}")


def upload_assets(template: Mapping[str, Any], s3: Any, account: str, region: str) -> None:
    package = package_functions()
    buckets = {b["Name"] for b in s3.list_buckets().get("Buckets", [])}
    for resource in template["Resources"].values():
        if resource["Type"] != "AWS::Lambda::Function":
            continue
        code = resource["Properties"]["Code"]
        bucket, key = _substitute(code["S3Bucket"], account, region), _substitute(code["S3Key"], account, region)
        if bucket not in buckets:
            s3.create_bucket(Bucket=bucket)
            buckets.add(bucket)
        s3.put_object(Bucket=bucket, Key=key, Body=package)


def deploy(client: Callable[[str], Any], region: str, template: Mapping[str, Any], stack_name: str) -> dict[str, str]:
    """Create the stack (or keep the one already there) and return its outputs."""
    cloudformation = client("cloudformation")
    existing = _stack(cloudformation, stack_name)
    if existing is None or existing["StackStatus"].endswith("_FAILED"):
        ssm = client("ssm")
        ssm.put_parameter(Name=BOOTSTRAP_VERSION_PARAMETER, Value=BOOTSTRAP_VERSION, Type="String", Overwrite=True)
        account = client("sts").get_caller_identity()["Account"]
        upload_assets(template, client("s3"), account, region)
        cloudformation.create_stack(
            StackName=stack_name,
            TemplateBody=json.dumps(template),
            Capabilities=["CAPABILITY_IAM", "CAPABILITY_NAMED_IAM"],
        )
        cloudformation.get_waiter("stack_create_complete").wait(
            StackName=stack_name, WaiterConfig={"Delay": 1, "MaxAttempts": 120}
        )
        existing = _stack(cloudformation, stack_name)
    assert existing is not None
    return {output["OutputKey"]: output["OutputValue"] for output in existing.get("Outputs", [])}


def _stack(cloudformation: Any, stack_name: str) -> dict[str, Any] | None:
    try:
        return dict(cloudformation.describe_stacks(StackName=stack_name)["Stacks"][0])
    except ClientError as error:
        # CloudFormation has no error code of its own for a missing stack.
        if error.response["Error"]["Code"] == "ValidationError" and "does not exist" in str(error):
            return None
        raise
