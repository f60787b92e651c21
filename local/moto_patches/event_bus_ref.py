"""`Ref` of an `AWS::Events::EventBus` is the bus's name, as CloudFormation answers it.

"When you pass the logical ID of this resource to the intrinsic Ref function, Ref returns the name
of the event bus" (https://docs.aws.amazon.com/AWSCloudFormation/latest/UserGuide/aws-resource-events-eventbus.html,
Return values). Upstream's EventBus has no `physical_resource_id`, so moto's CloudFormation resolves
the Ref to the bus object itself: a rule on the bus (`EventBusName: {"Ref": bus}`) fails to deploy
with an AttributeError, and a function's environment would hold no name.
"""

from __future__ import annotations


def apply() -> None:
    from moto.events.models import EventBus

    EventBus.physical_resource_id = property(lambda bus: bus.name)  # type: ignore[attr-defined]
