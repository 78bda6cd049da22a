"""Outputs for LLM pipelines and newsletters, beside the JSON Feed and Atom of ``render.py``.

    cursor.py   the opaque ``--since`` cursor: a scope and a visibility seq (migration 0010)
    text.py     a tokenizer-free token estimate and a cheap language guess
    jsonl.py    one JSON object per kept item (``feedmd export --format jsonl``)
    bundle.py   the same as Markdown files within a token budget (``--format markdown``)
    digest.py   a newsletter digest, HTML or Markdown, from Jinja2 templates (``--format html``,
                ``--format digest-markdown``)

Pure: items in, text out. The store reads are ``Store.visible_items`` and
``Store.digest_items`` (``feedmd/store/outputs.py``).

May import: what ``feedmd.delivery`` may, and ``delivery.render``.
"""
