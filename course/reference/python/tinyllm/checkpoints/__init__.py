"""Reading real checkpoints into numpy: what the course's models are built from.

Not a module you write: `ol milestone` serves it from the reference tree
beside your own modules, as tinyllm.native is served for L9.6.
"""
