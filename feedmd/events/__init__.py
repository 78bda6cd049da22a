"""Event grouping: coverage of one event by many outlets, found with a small local model.

The rules of stage 1 and stage 2 catch copies; this package groups different write-ups of
one event ("Pope Leo to have surgery" in 30 wordings). One job per module:

- ``vetoes``   templated headlines of different events: numbers, directions, subjects
- ``grouper``  ``assign_events``: pure decisions against an ``EventWindow``
- ``step``     a run's event step; ``catchup`` the items that waited for their event

The headline encoder is the sentence model's (``feedmd.model``); the vectors' stored form
and the exact scan the store answers ``EventWindow.nearest`` with are fingerprints
(``feedmd.fingerprints.vectors``, ``vector_scan``).
docs/events.md has the model choice, its licence and checksum, and the measurements.

May import: ``feedmd.store`` (its package interface), ``feedmd.models``,
``feedmd.model``, ``feedmd.fingerprints``, ``feedmd.settings`` and the base modules; not
another part (sources, stages, delivery).
"""

from feedmd.events.grouper import (
    EventDecision,
    EventItem,
    EventWindow,
    MemoryWindow,
    Neighbour,
    assign_events,
)
from feedmd.fingerprints.vectors import from_stored, normalise, to_stored
from feedmd.model.encoder import MODEL_NAME, E5Encoder, Encoder, EventModelMissing

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
