"""Exhaustive checks: kernel and executable spec side by side, within stated bounds.

The conversions between kernel values and spec values live here, never in the spec.
"""
