"""One parse of a GGUF file's metadata for a whole load by transformers.

from_pretrained(folder, gguf_file=...) makes a gguf.GGUFReader of the file
three times: for the tokenizer, for the config and for the weights.  Each
reads every metadata field item by item through a memory map: 18 s for
Gemma 3 270M, whose tokenizer holds 262,144 strings.  Inside `one_parse()`,
every GGUFReader of the same file is the first one made; the reader maps
the file read-only and transformers only reads it, so what it builds is
the same.

    with gguf_once.one_parse():
        tokenizer = AutoTokenizer.from_pretrained(path.parent, gguf_file=path.name)
        model = AutoModelForCausalLM.from_pretrained(path.parent, gguf_file=path.name, ...)
"""

from __future__ import annotations

import os
from contextlib import contextmanager


@contextmanager
def one_parse():
    import gguf   # transformers imports GGUFReader from it at each load, so the name is replaced here

    made = {}
    own = gguf.GGUFReader

    def reader(path, mode="r"):
        key = (os.path.realpath(path), mode)
        if key not in made:
            made[key] = own(path, mode)
        return made[key]

    gguf.GGUFReader = reader
    try:
        yield
    finally:
        gguf.GGUFReader = own
