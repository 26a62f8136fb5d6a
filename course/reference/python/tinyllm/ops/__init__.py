"""Operators with interchangeable backends (L7.3x): tinyllm.ops.registry.get_op("rope")."""
