"""Moved to :mod:`policy.rotation.lanes`; this module keeps old imports working."""

from policy.rotation.lanes import Lane, parse_lane

__all__ = ["Lane", "parse_lane"]
