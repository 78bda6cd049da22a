"""Evaluation: feedmd measured on labelled data (``feedmd eval``, ``feedmd sweep``).

- ``headlines``    stage 1 on labelled headlines and headline pairs
- ``pages``        the prose rule against human-checked article bodies
- ``reprints``     stage 2 on page pairs (``feedmd fingerprint`` / ``compare`` too);
                   ``reprint_set`` builds labelled pairs from real pages
- ``events``       event grouping on labelled headlines and pairs
- ``sweep``        the evaluations over a grid of settings

May import: what ``feedmd.tools`` may (the pipeline's step functions, the deciders, the
event model, a throwaway store).
"""
