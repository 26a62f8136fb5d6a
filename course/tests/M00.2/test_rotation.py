"""M00.2 course tests: the 2D rotation against its defining properties and
complex multiplication in float64."""

import numpy as np
import pytest

from tinyllm.maths.rotation import rotate_pairs, rotation_matrix

ANGLES = np.array([0.0, 0.3, 1.0, np.pi / 2, 2.5, -1.2, 1000.0])


def test_counter_clockwise_handedness():
    a, b = rotate_pairs(1.0, 0.0, ANGLES)
    np.testing.assert_allclose(a, np.cos(ANGLES), atol=1e-15, err_msg="(1, 0) must go to (cos, sin)")
    np.testing.assert_allclose(b, np.sin(ANGLES), atol=1e-15, err_msg="(1, 0) must go to (cos, sin): counter-clockwise")
    a, b = rotate_pairs(0.0, 1.0, np.pi / 2)
    np.testing.assert_allclose([a, b], [-1.0, 0.0], atol=1e-15, err_msg="(0, 1) turned by 90 degrees is (-1, 0)")


def test_matches_complex_multiplication():
    rng = np.random.default_rng(1)
    a, b = rng.standard_normal((2, 7)), rng.standard_normal((2, 7))
    z = (a + 1j * b) * np.exp(1j * ANGLES)
    ra, rb = rotate_pairs(a, b, ANGLES)
    np.testing.assert_allclose(ra, z.real, atol=1e-12, err_msg="rotating (a, b) is (a + ib) * e^{i angle}: real part")
    np.testing.assert_allclose(rb, z.imag, atol=1e-12, err_msg="rotating (a, b) is (a + ib) * e^{i angle}: imaginary part")


def test_rotation_matrix_agrees_with_rotate_pairs():
    rng = np.random.default_rng(2)
    a, b = rng.standard_normal(7), rng.standard_normal(7)
    R = rotation_matrix(ANGLES)
    assert R.shape == (7, 2, 2)
    via_matrix = np.einsum("nij,nj->ni", R, np.stack([a, b], axis=-1))
    np.testing.assert_allclose(np.stack(rotate_pairs(a, b, ANGLES), axis=-1), via_matrix, atol=1e-12)


def test_length_inverse_and_composition():
    rng = np.random.default_rng(3)
    a, b = rng.standard_normal(7), rng.standard_normal(7)
    ra, rb = rotate_pairs(a, b, ANGLES)
    np.testing.assert_allclose(ra**2 + rb**2, a**2 + b**2, rtol=1e-12, err_msg="a rotation keeps length")
    R = rotation_matrix(ANGLES)
    np.testing.assert_allclose(np.swapaxes(R, -1, -2), rotation_matrix(-ANGLES), atol=1e-15, err_msg="R(a)^T = R(-a)")
    other = ANGLES[::-1]
    np.testing.assert_allclose(R @ rotation_matrix(other), rotation_matrix(ANGLES + other), atol=1e-12,
                               err_msg="R(a) R(b) = R(a + b)")


def test_broadcasting_dtypes_and_errors():
    a, b = rotate_pairs(np.ones((3, 1), np.float32), np.zeros((3, 1), np.float32), np.float32([0.1, 0.2]))
    assert a.shape == (3, 2) and a.dtype == np.float32, "float32 in, float32 out, broadcast shape"
    assert rotate_pairs(1, 0, 0)[0].dtype == np.float64, "integers become float64"
    with pytest.raises(ValueError):
        rotate_pairs(np.ones(3), np.ones(3), np.ones(4))
    with pytest.raises(TypeError):
        rotate_pairs("a", 1.0, 0.5)
    with pytest.raises(TypeError):
        rotation_matrix("half")
