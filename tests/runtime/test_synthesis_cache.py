"""The runtime's synthesized templates are kept by what they were made from (local/deploy.py): a
template is reused only while every input is the same, so an edit is never served stale. Shown on
this product's app (local/product.py)."""

from __future__ import annotations

import dataclasses
import json
import shutil
from pathlib import Path
from typing import Any

from local.deploy import CdkApp, synthesis_key, synthesize
from local.product import APP


def sources(where: Path) -> CdkApp:
    """The app over a small tree with every kind of input the key reads, in a folder named like an
    excluded one (a clone may live under `tests/`: only the parts inside the repo are matched)."""
    root = where / "tests" / "repo"
    root.mkdir(parents=True)
    for name in APP.input_files:
        (root / name).write_text(f"{name} v1\n")
    for folder in APP.input_folders:
        (root / folder / "sub").mkdir(parents=True)
        (root / folder / "sub" / "module.py").write_text("x = 1\n")
    return dataclasses.replace(APP, root=root)


def test_the_key_changes_with_any_input_and_the_context(tmp_path: Path) -> None:
    app = sources(tmp_path)
    root = app.root
    first = synthesis_key(app, {})
    assert synthesis_key(app, {}) == first
    assert synthesis_key(app, {"authorizer": "jwt"}) != first
    for changed in [
        root / "cdk.json",
        root / "package-lock.json",
        *(root / f / "sub" / "module.py" for f in APP.input_folders),
    ]:
        before = changed.read_text()
        changed.write_text(before + "# edited\n")
        assert synthesis_key(app, {}) != first, changed
        changed.write_text(before)
    assert synthesis_key(app, {}) == first
    (root / "infra" / "sub" / "new.json").write_text("{}")  # a new file is an input too
    assert synthesis_key(app, {}) != first


def test_caches_and_bytecode_are_not_inputs(tmp_path: Path) -> None:
    app = sources(tmp_path)
    root = app.root
    first = synthesis_key(app, {})
    (root / "functions" / "sub" / "__pycache__").mkdir()
    (root / "functions" / "sub" / "__pycache__" / "module.cpython-311.pyc").write_bytes(b"\0")
    assert synthesis_key(app, {}) == first
    shutil.rmtree(root / "functions" / "sub" / "__pycache__")


def test_a_template_made_from_the_same_inputs_is_read_back(tmp_path: Path) -> None:
    kept = {"Resources": {"Marker": {"Type": "AWS::SQS::Queue"}}}
    (tmp_path / f"{synthesis_key(APP, {'k': 'v'})}.json").write_text(json.dumps(kept))
    assert synthesize(dataclasses.replace(APP, synth_cache=tmp_path), {"k": "v"}) == kept


def test_only_the_newest_templates_are_kept(tmp_path: Path) -> None:
    import os

    from local.deploy import _forget_all_but_the_newest

    for age in range(20):
        made = tmp_path / f"{age:02d}.json"
        made.write_text("{}")
        os.utime(made, (1_000_000 - age, 1_000_000 - age))  # 00 is the newest
    _forget_all_but_the_newest(tmp_path, 16)
    assert sorted(path.name for path in tmp_path.glob("*.json")) == [f"{age:02d}.json" for age in range(16)]


def test_processes_that_start_together_on_an_empty_cache_synthesize_once(tmp_path: Path, monkeypatch: Any) -> None:
    """The test workers and `make run` may all start on a fresh clone at once: one synthesizes (about
    10 s of CPU), the others wait for its template instead of each making the same one."""
    import fcntl
    import threading

    from local import deploy

    made: list[int] = []
    # The one synthesizing holds on until the other two starters are at the lock (each has called
    # flock), so they all started together whatever the threads' timing.
    at_the_lock = threading.Semaphore(0)
    real_flock = fcntl.flock

    def counted_flock(lock: Any, operation: int) -> None:
        if operation == fcntl.LOCK_EX:
            at_the_lock.release()
        real_flock(lock, operation)

    def synthesis_while_the_others_wait(app: CdkApp, context: Any = None) -> dict[str, Any]:
        made.append(1)
        for _ in range(3):  # its own flock and the other two starters'
            assert at_the_lock.acquire(timeout=10)
        return {"Resources": {}}

    monkeypatch.setattr(fcntl, "flock", counted_flock)
    monkeypatch.setattr(deploy, "synthesize_in_child", synthesis_while_the_others_wait)
    app = dataclasses.replace(APP, synth_cache=tmp_path)
    templates: list[dict[str, Any]] = []
    starters = [threading.Thread(target=lambda: templates.append(synthesize(app, {"k": "v"}))) for _ in range(3)]
    for starter in starters:
        starter.start()
    for starter in starters:
        starter.join()
    assert templates == [{"Resources": {}}] * 3
    assert len(made) == 1
