"""How the host names a request, shared by both halves of the kernel."""

from __future__ import annotations

from typing import Final, TypeAlias

__all__ = ["REQUEST_ID_RULE", "RequestId", "is_request_id"]

#: A request's identity as the host names it (vLLM uses strings; tests use both).
#: Any value that :func:`is_request_id` accepts serves (hashable and equal to
#: itself); any other is refused where it enters.
RequestId: TypeAlias = str | int

#: What :func:`is_request_id` asks of an id, in the words of every refusal.
REQUEST_ID_RULE: Final = "hashable and equal to itself"


def is_request_id(value: object) -> bool:
    """Whether ``value`` can be a request's identity: hashable and equal to itself
    (the one identity rule of both halves).

    Both halves find requests by hash and by equality (the rotation backlog
    compares ids with ``==``, the waiting queue's hash map tries ``is`` first),
    and a host's scheduler keys them in dicts. A value that is not equal to
    itself, such as a float NaN, would be found by one and not by the other: a
    second arrival of the same NaN would not be a duplicate, yet a dict would
    find it. Ids of the exact types ``str`` and ``int`` always pass.

    >>> is_request_id("req-1"), is_request_id(10**5000), is_request_id(("a", 1))
    (True, True, True)
    >>> is_request_id(["req-1"]), is_request_id(float("nan")), is_request_id(1.5)
    (False, False, True)
    """
    if type(value) is str or type(value) is int:  # the exact types: always an id
        return True
    try:
        hash(value)
        return bool(value == value)  # noqa: PLR0124 - the test itself: NaN is not equal to itself
    except Exception:  # a __hash__ or __eq__ that fails (TypeError or other): not usable
        return False
