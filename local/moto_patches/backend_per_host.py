"""A host's service is looked up once.

Upstream (`DomainDispatcherApplication.get_backend_for_host`): moto finds the service a
request is for by listing its own package directory, on every request (11% of the emulator's time
under `make bench-load`, measured with py-spy). A host's service never changes while the server
runs, so the answer is kept per host.
"""

from __future__ import annotations

import functools


def apply() -> None:
    from moto.moto_server.werkzeug_app import DomainDispatcherApplication

    DomainDispatcherApplication.get_backend_for_host = functools.lru_cache(maxsize=256)(  # type: ignore[method-assign]
        DomainDispatcherApplication.get_backend_for_host
    )
