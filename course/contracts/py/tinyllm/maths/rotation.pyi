"""M00.2 The 2D rotation of pairs.

    R(alpha) = [[cos alpha, -sin alpha],
                [sin alpha,  cos alpha]]

R(alpha) keeps lengths, R(alpha)^T = R(-alpha), R(alpha) R(beta) =
R(alpha + beta).  It turns counter-clockwise: (1, 0) goes to
(cos alpha, sin alpha).  Read (a, b) as the complex number a + ib and the
rotation is multiplication by e^{i alpha}.  This is the definition of a
rotation that RoPE (L7.3) must agree with in both of its layouts.
Chapter: course/chapters/M00.2-rotation.md.
"""

from __future__ import annotations

import numpy as np


def rotation_matrix(angle) -> np.ndarray:
    """R(angle) for a number or an array of angles (radians).

    Returns an array of shape angle.shape + (2, 2): [..., 0, :] is
    (cos, -sin) and [..., 1, :] is (sin, cos).  float32 angles give float32,
    everything else float64.  Raises TypeError if angle is not numeric.
    """
    ...


def rotate_pairs(a, b, angle) -> tuple[np.ndarray, np.ndarray]:
    """Rotate each pair (a, b) counter-clockwise by `angle` (radians).

    a, b, angle: numbers or numpy arrays that broadcast together.
    Returns (a cos angle - b sin angle, a sin angle + b cos angle), each of the
    broadcast shape, computed in the inputs' float dtype (integers become
    float64).

    Raises:
        TypeError: an argument is not numeric.
        ValueError: the shapes do not broadcast together.
    """
    ...
