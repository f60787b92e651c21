"""Deploys a CDK app's synthesized template into an emulator with CloudFormation, as `cdk deploy`
would: the same template as a real deployment, so there is no second definition of the
infrastructure. Beforehand, it provides what CDK's bootstrap provides: the bootstrap version
parameter, and the asset bucket holding each Lambda package.

Which app, and where its template and code come from, is the caller's (`CdkApp`; local/product.py
describes this one).
"""

from __future__ import annotations

import argparse
import contextlib
import fcntl
import fnmatch
import hashlib
import io
import json
import os
import subprocess
import sys
import threading
import zipfile
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from botocore.exceptions import ClientError

BOOTSTRAP_VERSION_PARAMETER = "/cdk-bootstrap/hnb659fds/version"
BOOTSTRAP_VERSION = "30"
# Synthesized templates kept per app, by what they were made from (a synthesis costs about 10 s of
# CPU, and `make run` and the tests start the runtime many times over the same sources).
SYNTH_CACHE_KEPT = 16


@dataclass(frozen=True)
class CdkApp:
    """A CDK app and the one stack of it deployed locally, as `cdk synth` and `cdk deploy` see them."""

    root: Path  # the app's folder
    stack_name: str
    # Python run in `root` that prints the stack's template as JSON; its context (over cdk.json's)
    # comes as JSON in sys.argv[1].
    synth_script: str
    # What the template is made from, besides the context (under `root`): an edit to any of them is
    # a new synthesis.
    input_files: tuple[str, ...]
    input_folders: tuple[str, ...]
    # The folder every function's code asset is (its Python files, under the folder's own name).
    code_folder: str
    # File and folder name patterns that are neither inputs nor code (caches, tests, tool litter).
    excluded: tuple[str, ...] = ()
    # Where templates are kept by what they were made from; None: synthesized every time.
    synth_cache: Path | None = None

    def excludes(self, relative: Path) -> bool:
        """Whether a path (relative to `root`) is left out, for any of its parts."""
        return any(fnmatch.fnmatch(part, pattern) for part in relative.parts for pattern in self.excluded)


def context_entry(text: str) -> tuple[str, str]:
    """One `-c KEY=VALUE` of CDK context, as `cdk deploy -c` takes it (an argparse `type`)."""
    key, separator, value = text.partition("=")
    if not key or not separator:
        raise argparse.ArgumentTypeError(f"expects KEY=VALUE, got {text!r}")
    return key, value


def synthesis_key(app: CdkApp, context: Mapping[str, str] | None = None) -> str:
    """A digest of the context and of every input file's path and bytes: a change to any is a new key."""
    root = app.root
    digest = hashlib.sha256(json.dumps(dict(context or {}), sort_keys=True).encode())
    files = [root / name for name in app.input_files]
    for folder in app.input_folders:
        files += [
            path for path in (root / folder).rglob("*") if path.is_file() and not app.excludes(path.relative_to(root))
        ]
    for path in sorted(files):
        digest.update(str(path.relative_to(root)).encode() + b"\0")
        digest.update(path.read_bytes() if path.exists() else b"<missing>")
        digest.update(b"\0")
    return digest.hexdigest()[:32]


def synthesize(app: CdkApp, context: Mapping[str, str] | None = None) -> dict[str, Any]:
    """The stack's template with `context` over cdk.json's: from the app's `synth_cache` when the
    same inputs were synthesized before, else synthesized and kept there."""
    folder = app.synth_cache
    if folder is None:
        return synthesize_in_child(app, context)
    cached = folder / f"{synthesis_key(app, context)}.json"
    if cached.exists():
        return _read_template(cached)
    folder.mkdir(parents=True, exist_ok=True)
    # Processes that start together on an empty cache (the test workers of a fresh clone, `make run`
    # beside them) wait for the one synthesizing instead of each making the same template. The lock
    # file goes once the template is there; a process that opened it before that finds the template.
    lock_path = cached.with_suffix(".lock")
    with open(lock_path, "a", encoding="utf-8") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        if cached.exists():
            return _read_template(cached)
        template = synthesize_in_child(app, context)
        written = cached.with_name(f"{cached.name}.{os.getpid()}.{threading.get_ident()}.tmp")  # whole or absent
        written.write_text(json.dumps(template), encoding="utf-8")
        written.replace(cached)
        lock_path.unlink(missing_ok=True)
    _forget_all_but_the_newest(folder, SYNTH_CACHE_KEPT)
    return template


def _read_template(path: Path) -> dict[str, Any]:
    template: dict[str, Any] = json.loads(path.read_text(encoding="utf-8"))
    return template


def _forget_all_but_the_newest(cache_dir: Path, kept: int) -> None:
    """Every edit makes a new template: keep the cache from growing without end."""
    templates = []
    for path in cache_dir.glob("*.json"):
        with contextlib.suppress(FileNotFoundError):  # another process may be pruning too
            templates.append((path.stat().st_mtime, path))
    for _, stale in sorted(templates, reverse=True)[kept:]:
        stale.unlink(missing_ok=True)


def synthesize_in_child(app: CdkApp, context: Mapping[str, str] | None = None) -> dict[str, Any]:
    """The stack's template with `context` over cdk.json's, synthesized in a child process.

    CDK runs a Node process behind the Python app. Keeping it out of the long-running runtime means
    Ctrl-C, which the terminal sends to the whole process group, has no Node process left here to
    break on the way out.
    """
    completed = subprocess.run(
        [sys.executable, "-c", app.synth_script, json.dumps(dict(context or {}))],
        cwd=app.root,
        capture_output=True,
        text=True,
        check=False,
    )
    if completed.returncode != 0:
        raise RuntimeError(f"cdk synthesis failed:\n{completed.stderr}")
    template: dict[str, Any] = json.loads(completed.stdout)
    return template


def package_code(app: CdkApp) -> bytes:
    """A zip of the app's code folder (the emulator stores the code; the local runtime runs it)."""
    folder = app.root / app.code_folder
    excluded_folders = {pattern for pattern in app.excluded if "*" not in pattern}
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w", zipfile.ZIP_DEFLATED) as archive:
        for path in sorted(folder.rglob("*.py")):
            relative = path.relative_to(folder)
            if not excluded_folders & set(relative.parts):
                archive.write(path, f"{app.code_folder}/{relative}")
    return buffer.getvalue()


def _substitute(value: Any, account: str, region: str) -> str:
    if isinstance(value, str):
        return value
    if isinstance(value, Mapping) and "Fn::Sub" in value:
        return str(value["Fn::Sub"]).replace("${AWS::AccountId}", account).replace("${AWS::Region}", region)
    raise ValueError(f"cannot resolve asset location {value!r}")


def upload_assets(template: Mapping[str, Any], s3: Any, account: str, region: str, package: bytes) -> None:
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


def deploy(client: Callable[[str], Any], region: str, app: CdkApp, template: Mapping[str, Any]) -> dict[str, str]:
    """Create the app's stack from `template` (or keep the one already there) and return its outputs."""
    stack_name = app.stack_name
    cloudformation = client("cloudformation")
    existing = _stack(cloudformation, stack_name)
    if existing is None or existing["StackStatus"].endswith("_FAILED"):
        ssm = client("ssm")
        ssm.put_parameter(Name=BOOTSTRAP_VERSION_PARAMETER, Value=BOOTSTRAP_VERSION, Type="String", Overwrite=True)
        account = client("sts").get_caller_identity()["Account"]
        upload_assets(template, client("s3"), account, region, package_code(app))
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
