"""The ``morphology`` topic's wire format (no rclpy): ``std_msgs/UInt8MultiArray`` whose ``data`` holds the intact
links of each leg (0-3) and whose ``layout.dim[0].label`` lists the legs in that order (``LF,LM,LR,RF,RM,RR``).

One codec for every side: the damage monitor publishes with it, the gait controller and the predictor read with
it, the bag writer and reader of ``validation`` and the demo's display use it too.

Example::

    >>> morphology_to_wire([3, 0, 3, 3, 3, 3], ["LF", "LM", "LR", "RF", "RM", "RR"])
    ([3, 0, 3, 3, 3, 3], 'LF,LM,LR,RF,RM,RR')
    >>> morphology_from_wire([0, 3, 3, 3, 3, 3], "LM,LF,LR,RF,RM,RR", ["LF", "LM", "LR", "RF", "RM", "RR"])
    [3, 0, 3, 3, 3, 3]
"""
from __future__ import annotations

from typing import List, Optional, Sequence, Tuple

from jethexa_dynamics.errors import InvalidMessage


def morphology_to_wire(links_per_leg: Sequence[int], leg_names: Sequence[str]) -> Tuple[List[int], str]:
    """(data, layout label) of a ``morphology`` message for intact ``links_per_leg`` of ``leg_names``."""
    if len(links_per_leg) != len(leg_names):
        raise InvalidMessage("morphology: %d entries for %d legs" % (len(links_per_leg), len(leg_names)))
    return [int(v) for v in links_per_leg], ",".join(leg_names)


def morphology_from_wire(data: Sequence[int], label: str, leg_names: Optional[Sequence[str]] = None,
                         links: int = 3) -> List[int]:
    """Links per leg (in ``leg_names`` order) from a ``morphology`` message's data and layout label.

    A label that lists the same legs in another order is honoured; ``leg_names=None`` keeps the data order
    (only the ranges are checked). Raises :class:`InvalidMessage` naming the field and the allowed range.
    """
    vals = [int(v) for v in data]
    if leg_names is not None and len(vals) != len(leg_names):
        raise InvalidMessage("morphology.data: has %d entries, expected %d (one per leg %s)"
                             % (len(vals), len(leg_names), ",".join(leg_names)))
    for i, v in enumerate(vals):
        if not 0 <= v <= links:
            raise InvalidMessage("morphology.data[%d] = %d: must be in [0, %d] intact links" % (i, v, links))
    if not label or leg_names is None:
        return vals
    order = [t.strip() for t in label.split(",")]
    if sorted(order) != sorted(leg_names):
        raise InvalidMessage("morphology.layout.dim[0].label = %r: must list the legs %s"
                             % (label, ",".join(leg_names)))
    by_leg = dict(zip(order, vals))
    return [by_leg[leg] for leg in leg_names]
