"""Fingerprints: what an item is reduced to for comparison, and the exact comparisons.

Pure functions and in-memory indexes, no I/O. Both the deciders (``stages``, ``events``)
and the store (which keeps these keys indexed) compute them, so they sit below both:

- ``urls``          URL normalisation and hashing, hosts
- ``headlines``     headline normalisation, tokens, Jaccard / containment / simhash
- ``cjk``           character 3-grams for Korean, Japanese and Chinese headlines
- ``subject_gate``  templated headlines about different subjects never match
- ``title_index``   an exact, sub-linear index of kept headlines
- ``shingles``      word shingles of prose, their containment and sampled keys
- ``tlsh_index``    TLSH digests decoded, an exact radius lookup
- ``tlsh_scan``     the same question over packed digest columns, vectorised
- ``vectors``       headline vectors: unit float32 to decide, int8 bytes to store
- ``vector_scan``   the blocked exact nearest-vector scan over stored blocks

May import: ``feedmd.settings``, ``feedmd.errors``.
"""
