"""M00.2 the 2D rotation of pairs.

    R(alpha) = [[cos alpha, -sin alpha],
                [sin alpha,  cos alpha]]

R(alpha) keeps lengths, R(alpha)^T = R(-alpha), and R(alpha) R(beta) =
R(alpha + beta).  Rotating the pair (a, b), read as the point (a, b) or the
complex number a + ib, by alpha gives (a cos alpha - b sin alpha,
a sin alpha + b cos alpha): counter-clockwise, so (1, 0) goes to
(cos alpha, sin alpha).  This is the one definition of a rotation that RoPE
(L7.3) must agree with in both of its layouts.
"""

from __future__ import annotations

import numpy as np


def rotation_matrix(angle) -> np.ndarray:
    """R(angle): shape angle.shape + (2, 2), float64 unless angle is float32."""
    angle = _float_array(angle, "rotation_matrix: angle")
    c, s = np.cos(angle), np.sin(angle)
    return np.stack([np.stack([c, -s], axis=-1), np.stack([s, c], axis=-1)], axis=-2)


def rotate_pairs(a, b, angle) -> tuple[np.ndarray, np.ndarray]:
    """Rotate each pair (a, b) counter-clockwise by `angle` (radians).

    a, b, angle: numbers or numpy arrays that broadcast together.
    Returns (a cos angle - b sin angle, a sin angle + b cos angle), each of
    the broadcast shape.  ValueError if the shapes do not broadcast.
    """
    a = _float_array(a, "rotate_pairs: a")
    b = _float_array(b, "rotate_pairs: b")
    angle = _float_array(angle, "rotate_pairs: angle")
    try:
        np.broadcast_shapes(a.shape, b.shape, angle.shape)
    except ValueError:
        raise ValueError(
            f"rotate_pairs: a {a.shape}, b {b.shape} and angle {angle.shape} do not broadcast "
            "together; give one angle per pair (or one angle for all)"
        ) from None
    c, s = np.cos(angle), np.sin(angle)
    return a * c - b * s, a * s + b * c


def _float_array(value, where: str) -> np.ndarray:
    array = np.asarray(value)
    if array.dtype.kind not in "iuf":
        raise TypeError(f"{where} must be numbers, got dtype {array.dtype}")
    return array if array.dtype.kind == "f" else array.astype(np.float64)
