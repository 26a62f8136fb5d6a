from tinyllm.modern.decoding import KVCache


def test_a_new_cache_is_empty():
    cache = KVCache()
    assert cache.layers is None and cache.length == 0


# Next: a toy model of your own (any object with forward(token_ids, positions,
# past)) that records the positions it is given: step must hand it
# cache.length, cache.length + 1, ... (chapter section 5), and greedy_generate
# must give the same ids with and without the cache.
