"""Moved to :mod:`policy.rotation.backlog`; this module keeps old imports working."""

from policy.rotation.backlog import BacklogEntry, EntryKind, GrantBacklog, take_next_grantee

__all__ = ["BacklogEntry", "EntryKind", "GrantBacklog", "take_next_grantee"]
