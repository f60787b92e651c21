"""boto3 sessions for tests: each its own, reading AWS's service models through one shared loader.

A test's handlers get a session of their own, so no event hook a fault put on an earlier test's
clients reaches them. A new session also loads and parses every service model it uses again, about
a tenth of a second of CPU per test; botocore's loader caches what it parsed, so one loader shared
by every session of the process parses each model once.
"""

from __future__ import annotations

import boto3
import botocore.loaders
import botocore.session

_LOADER = botocore.loaders.create_loader()


def new_session() -> boto3.Session:
    """A session with event hooks of its own and the process's one model loader."""
    core = botocore.session.get_session()
    core.register_component("data_loader", _LOADER)
    paths = list(_LOADER.search_paths)
    session = boto3.Session(botocore_session=core)
    # boto3 adds its own data path to the loader of every session it wraps: once is enough.
    if len(_LOADER.search_paths) > len(paths) and _LOADER.search_paths[-1] in paths:
        del _LOADER.search_paths[len(paths) :]
    return session
