"""L7.4 RoPE scaling: the frequencies and attention scaling of long-context
checkpoints, as Hugging Face transformers 5.19.0 computes them.

A rope type turns the plain frequency ladder of L7.3 (r = the rotary dim)

    theta_i = rope_theta ** (-2i / r),    i = 0 .. r/2 - 1

into the frequencies a checkpoint was trained with, and gives the factor s
that multiplies both cos/sin tables (attention_scaling).  L = the field
original_max_position_embeddings, the context the model was first trained on:

    default   theta_i                                                s = 1
    linear    theta_i / factor                                       s = 1
    dynamic   theta_i of a larger base, grown with seq_len           s = 1
    yarn      per pair i, a blend of theta_i and theta_i / factor    s = 0.1 ln(factor) + 1
    longrope  theta_i / ext_i (ext: short_factor or long_factor)     s = sqrt(1 + ln(factor) / ln(L))
    llama3    by wavelength 2 pi / theta_i: theta_i, theta_i / factor, or a blend; s = 1

The exact rule of each type, with every default and edge, is in the chapter,
course/chapters/L7.4-rope-scaling.md, sections 3 to 9; rope_parameters below
lists the fields.  The results feed L7.3's RopeSpec (rope_spec).

Missing, None and empty (chapter section 11): a field that is None (null in
config.json) counts as absent, in a block and at the top level of a config,
with one exception: truncate, which transformers reads for its truth (absent:
true; None, false or 0: false).  An empty block {} is no block.
"""

from __future__ import annotations

import numpy as np

from tinyllm.modern.rope import RopeSpec


def rope_parameters(rope_parameters: dict, head_dim: int, *, seq_len: int | None = None,
                    max_position_embeddings: int | None = None) -> tuple[np.ndarray, float]:
    """(inv_freq, attention_scaling) for one rope_parameters dict, as
    transformers 5.19.0's rope initialisation computes them.

    rope_parameters: the dict of a config.json's rope_parameters (or rope_scaling)
        block, with rope_theta in it.  Fields read (others are ignored):
            rope_type              "default" (when absent or None), "linear",
                                   "dynamic", "yarn", "longrope" or "llama3"
            rope_theta             the base, > 0 (every type)
            partial_rotary_factor  the share of each head that rotates (absent or
                                   None: 1.0)
            factor                 linear, dynamic, llama3: needed, > 0;
                                   yarn, longrope: optional (absent or None:
                                   max_position_embeddings / original_max_position_embeddings)
            original_max_position_embeddings   yarn, longrope, llama3: needed
            attention_factor       yarn, longrope: optional; replaces s as given
            mscale, mscale_all_dim yarn: optional (both non-zero: s is their ratio)
            beta_fast, beta_slow   yarn: optional (absent, None or 0: 32 and 1)
            truncate               yarn: optional; absent: True; read for its truth,
                                   so None, like False, turns truncation off
            short_factor, long_factor  longrope: needed, r/2 numbers each
            low_freq_factor, high_freq_factor  llama3: needed
    head_dim: the size of one attention head.  The rotary dim is
        r = int(head_dim * partial_rotary_factor); it must be even and >= 2
        (>= 4 for dynamic).
    seq_len: the number of positions in the sequence (its largest position + 1).
        Only two types depend on it:
          dynamic:  seq_len None or <= max_position_embeddings gives the plain
                    ladder; longer grows the base (chapter section 5).
          longrope: seq_len > original_max_position_embeddings uses long_factor;
                    seq_len None or <= original_max_position_embeddings uses
                    short_factor (a sequence exactly that long is still short).
    max_position_embeddings: the model's config value.  Needed by dynamic, and
        by yarn and longrope when their factor is absent.

    Returns (inv_freq, attention_scaling):
        inv_freq: float32 numpy array [r/2]: the rule evaluated in float64
            (in any order of operations) and rounded once to float32, to within
            1e-6 relative.  On the fixture's configs, the real checkpoints' among
            them, that is within 1e-6 of transformers 5.19.0's own inv_freq,
            which it computes in float32 steps.
        attention_scaling: a float: 1.0 for default, linear, dynamic and
            llama3; for yarn and longrope as the chapter gives it.

    The dict is not changed.

    Raises:
        ValueError, naming the field: an unknown rope_type; a needed field
            missing (absent or None); rope_theta or factor <= 0;
            partial_rotary_factor > 1, or a rotary dim that is odd or < 2;
            dynamic with a rotary dim below 4 (its exponent r / (r - 2));
            llama3's low_freq_factor >= high_freq_factor; longrope's
            short_factor or long_factor not r/2 long; max_position_embeddings
            None where it is needed.
    """
    ...


def rope_spec(config: dict, *, seq_len: int | None = None, layer_type: str | None = None) -> RopeSpec:
    """L7.3's RopeSpec for a model's config.json, given as a dict.

    config: the parsed config.json.  Read (None counts as absent throughout):
        rope_parameters, or else rope_scaling (either may be absent, None or
            {}: then the other; neither: plain RoPE); its legacy key "type" is
            taken as "rope_type" when "rope_type" is absent or None
        rope_theta, partial_rotary_factor, original_max_position_embeddings at
            the top level: used when the block does not have them (older files,
            Phi-3); rope_theta defaults to 10000.0
        head_dim, or else hidden_size // num_attention_heads (integer division)
        max_position_embeddings (if present)
    seq_len: as in rope_parameters (dynamic and longrope depend on it).
    layer_type: which layer type's block to read when the config gives one
        block per layer type, as transformers 5.19.0 writes Gemma 3's:
        rope_parameters = {"sliding_attention": {...}, "full_attention": {...}}.
        The block is nested so when one of its keys is among the config's
        layer_types (absent or None: none is); then layer_type must be one of
        those keys, and its block is read as a flat block is (the top-level
        fields fill it in the same way).  A flat block serves every layer
        type, whatever layer_type is.

    Returns RopeSpec(inv_freq, attention_scaling) from rope_parameters, in the
    "half" layout (HF's rotate_half) and with rotary_dim = 2 * len(inv_freq).
    The config dict is not changed.

    Raises:
        ValueError: no head_dim and no hidden_size / num_attention_heads to
            derive it from (absent or None); a block nested by layer type and
            layer_type None or not one of its keys, or its block for
            layer_type null (a layer type with no RoPE); and everything
            rope_parameters raises.
    """
    ...
