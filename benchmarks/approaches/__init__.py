"""The counters `make bench` compares: the AWS blog's seven (seed 000), the paper's design as
published (seed 001) and this project. Each fits on a screen; none is part of functions/."""

from __future__ import annotations

from benchmarks.approaches.atomic import AtomicCounter
from benchmarks.approaches.base import Approach, LimitReached
from benchmarks.approaches.collections_and_sets import ItemCollection, ResourceSet
from benchmarks.approaches.occ import OptimisticCounter, OptimisticCounterWithHistory
from benchmarks.approaches.paper import PaperDesign
from benchmarks.approaches.this_project import ThisProject
from benchmarks.approaches.transactions import TransactionWithMarker, TransactionWithToken

APPROACHES: tuple[type[Approach], ...] = (
    AtomicCounter,
    OptimisticCounter,
    OptimisticCounterWithHistory,
    TransactionWithToken,
    TransactionWithMarker,
    ItemCollection,
    ResourceSet,
    PaperDesign,
    ThisProject,
)

__all__ = ["APPROACHES", "Approach", "LimitReached"]
