"""The waiting entries by identity: one index a line of queue versions hands on.

A queue must find an entry by its request's id (a duplicate is refused, a
request is removed by id) in every version, and versions usually form a line:
each is made from the last, and the last is the one used next. So one index
serves a whole line of versions. The version that holds it (its *holder*)
hands it on to the version made from it, which updates it in place: a join or
a leave is one dict operation, and allocates nothing the collector has to
visit. A version that no longer holds the index (one that handed it on, or
any version a second one is made from) answers from a dict of its own, made
from its entries when it is first asked, O(n) once. A version made from it (a
*branch*) gets no index (:class:`Unindexed`: its checks read that dict), and
makes one of its own, O(n) once, only if a version is made from it in turn:
making versions again and again from one version costs no copy each time.
Every version answers as if it held a map of its own: the index is invisible
at the queue's interface.

Why not a persistent map: an ``immutables.Map`` copies the path of each update,
about 70 references per join or leave at 100,000 waiting, and each new node is
visited by the young collections and kept into the old generation. In vLLM's
serving loop at 100,000 waiting those collections made the median step 2.0x
vLLM's own; with the identity updates left out it was 1.2x
(docs/performance.md, "Designed for the collector").

Who holds the index is a *stamp*: the holder's number, a key of
``Identities._holder``. Handing on takes the stamp out with one ``dict.pop``, a
single operation under any interpreter, so of two versions made from the
holder at once, only one gets the index (the other is a branch); readers check the
stamp before and after they read, so a read that overlapped a hand-over is
made again from the reader's own dict.

:class:`Shards`: a dict split by hash. A dict that keeps about N entries while
as many come and go rebuilds its table every N / 2 insertions or so, O(N) in
one call (7 ms at 100,000 here, 29 ms inside vLLM's loop); :data:`SHARDS`
dicts chosen by the key's hash rebuild N / :data:`SHARDS` entries at a time.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Mapping, Sequence
from itertools import chain
from typing import Final, Generic, TypeVar

from policy.identity import RequestId
from policy.waiting.entry import WaitingEntry, same_entry
from policy.waiting.fast.rows import IDENTITY, Row

__all__ = ["SHARDS", "Identities", "Shards", "Unindexed"]

K = TypeVar("K")
V = TypeVar("V")

#: Dicts per :class:`Shards`: at 100,000 keys a rebuild copies about 1,600
#: entries (0.1 ms), where one dict would copy 100,000.
SHARDS: Final = 64
_MASK: Final = SHARDS - 1


class Shards(Generic[K, V]):
    """A mapping held in :data:`SHARDS` dicts, chosen by the key's hash.

    >>> shards = Shards([("a", 1)])
    >>> shards["b"] = 2
    >>> len(shards), shards.size, shards.get("a"), "b" in shards, shards.pop("b")
    (2, 2, 1, True, 2)
    >>> shards.added("a", 3), shards.pop("a"), shards.added("a", 3), list(shards.values())
    (False, 1, True, [3])
    """

    __slots__ = ("_dicts", "size")

    def __init__(self, items: Iterable[tuple[K, V]] = ()) -> None:
        self._dicts: tuple[dict[K, V], ...] = tuple({} for _ in range(SHARDS))
        #: How many keys there are (read it; ``len`` costs a call).
        self.size = 0
        for key, value in items:
            self[key] = value

    def __len__(self) -> int:
        return self.size

    def __bool__(self) -> bool:
        return self.size > 0

    def __contains__(self, key: object) -> bool:
        return key in self._dicts[hash(key) & _MASK]

    def get(self, key: K) -> V | None:
        """The value of ``key``, or None."""
        return self._dicts[hash(key) & _MASK].get(key)

    def __getitem__(self, key: K) -> V:
        return self._dicts[hash(key) & _MASK][key]

    def __setitem__(self, key: K, value: V) -> None:
        shard = self._dicts[hash(key) & _MASK]
        if key not in shard:
            self.size += 1
        shard[key] = value

    def added(self, key: K, value: V) -> bool:
        """Add ``key`` with ``value`` unless ``key`` is there: whether it was added."""
        shard = self._dicts[hash(key) & _MASK]
        if key in shard:
            return False
        shard[key] = value
        self.size += 1
        return True

    def pop(self, key: K) -> V:
        """The value of ``key``, removed (a ``KeyError`` if there is none)."""
        value = self._dicts[hash(key) & _MASK].pop(key)
        self.size -= 1
        return value

    def values(self) -> Iterator[V]:
        """Every value, shard by shard."""
        return chain.from_iterable(shard.values() for shard in self._dicts)


class Identities:
    """The rows of the version that holds this index, by identity.

    >>> from policy.waiting.entry import make_entry
    >>> index = Identities([tuple(make_entry("a", {}, 0, 0.0))])  # its maker's, being worked on
    >>> index.handed_on(0), index.held_by(1), index.claimed(0), index.claimed(1)
    (1, True, False, True)
    >>> index.held_by(1), index.given_back(1), index.held_by(1)
    (False, None, True)
    """

    __slots__ = ("_holder", "entries")

    def __init__(self, entries: Iterable[Row] = ()) -> None:
        #: The holder's rows (read by the queue; changed only by the version
        #: that claimed the index).
        self.entries: Shards[RequestId, Row] = Shards((row[IDENTITY], row) for row in entries)
        # the holder's stamp, the only key; none while a version works on it
        self._holder: dict[int, None] = {}

    def joined(self, entries: Sequence[Row]) -> int:
        """Each row of ``entries`` by its identity, in order: -1, or the position of
        the first whose identity is there already (then none of them joins)."""
        shards = self.entries
        dicts = shards._dicts
        for position, entry in enumerate(entries):
            identity = entry[IDENTITY]
            shard = dicts[hash(identity) & _MASK]
            if identity in shard:
                for earlier in entries[:position]:
                    del dicts[hash(earlier[IDENTITY]) & _MASK][earlier[IDENTITY]]
                return position
            shard[identity] = entry
        shards.size += len(entries)
        return -1

    def left(self, entries: Sequence[object]) -> int:
        """Each of ``entries``, a ``WaitingEntry`` whose row is here
        (:func:`~policy.waiting.entry.same_entry`), taken out: -1, or the position of
        the first that is not (then none of them leaves)."""
        shards = self.entries
        dicts = shards._dicts
        taken: list[Row] = []
        for position, entry in enumerate(entries):
            if type(entry) is WaitingEntry:
                identity = entry.identity
                shard = dicts[hash(identity) & _MASK]
                row = shard.get(identity)
                if row is not None and same_entry(row, entry):
                    del shard[identity]
                    taken.append(row)
                    continue
            for row in taken:
                dicts[hash(row[IDENTITY]) & _MASK][row[IDENTITY]] = row
            return position
        shards.size -= len(entries)
        return -1

    def dropped(self, rows: Sequence[Row]) -> None:
        """Each of ``rows``, rows held here (the holder's own), taken out."""
        dicts = self.entries._dicts
        for row in rows:
            identity = row[IDENTITY]
            del dicts[hash(identity) & _MASK][identity]
        self.entries.size -= len(rows)

    def held_by(self, stamp: int) -> bool:
        """Whether the version with ``stamp`` holds this index now."""
        return stamp in self._holder

    def claimed(self, stamp: int) -> bool:
        """Take the index from the version with ``stamp`` to make a version from it:
        whether it held it (then no other version holds it until
        :meth:`handed_on` or :meth:`given_back`). A new index is claimed by its
        maker, at stamp 0, without this call."""
        return self._holder.pop(stamp, False) is None

    def handed_on(self, stamp: int) -> int:
        """The claimed index (or a new one, at stamp 0), updated, to the new
        version: its stamp."""
        self._holder[stamp + 1] = None
        return stamp + 1

    def given_back(self, stamp: int) -> None:
        """The claimed index, unchanged, back to the version with ``stamp``."""
        self._holder[stamp] = None


class Unindexed:
    """In place of an index, for a version made from one that handed its index on: a
    *branch*, as when versions are made again and again from one version (a host
    trying alternatives). The new version gets no index (a copy would cost O(n)
    each time); the checks read the old version's own dict, and the new version
    makes an index of its own only when it is itself made from (a line starts
    there), once.

    >>> from policy.waiting.entry import make_entry
    >>> a = make_entry("a", {}, 0, 0.0)
    >>> branch = Unindexed({"a": tuple(a)})
    >>> branch.joined([tuple(make_entry("b", {}, 1, 0.0)), tuple(a)]), branch.left([a])
    (1, -1)
    >>> "a" in branch.entries
    True
    """

    __slots__ = ("_base", "entries")

    def __init__(self, base: Mapping[RequestId, Row]) -> None:
        self._base = base
        #: The old version's entries, read; what a new version would write, ignored.
        self.entries = _ReadOnly(base)

    def joined(self, entries: Sequence[Row]) -> int:
        """As :meth:`Identities.joined`, storing nothing."""
        seen: set[RequestId] = set()
        for position, entry in enumerate(entries):
            identity = entry[IDENTITY]
            if identity in self._base or identity in seen:
                return position
            seen.add(identity)
        return -1

    def left(self, entries: Sequence[object]) -> int:
        """As :meth:`Identities.left`, storing nothing."""
        seen: set[RequestId] = set()
        for position, entry in enumerate(entries):
            if type(entry) is not WaitingEntry or entry.identity in seen:
                return position
            row = self._base.get(entry.identity)
            if row is None or not same_entry(row, entry):
                return position
            seen.add(entry.identity)
        return -1

    def dropped(self, rows: Sequence[Row]) -> None:
        """As :meth:`Identities.dropped`, storing nothing."""

    def handed_on(self, stamp: int) -> int:  # noqa: ARG002 - as Identities.handed_on
        """Nothing to hand on: the new version has no index (stamp 0)."""
        return 0


class _ReadOnly:
    """A version's entries by identity, read; writes ignored (see :class:`Unindexed`)."""

    __slots__ = ("_base",)

    def __init__(self, base: Mapping[RequestId, Row]) -> None:
        self._base = base

    def __contains__(self, identity: object) -> bool:
        return identity in self._base

    def __setitem__(self, identity: RequestId, entry: Row) -> None:
        pass

    def pop(self, identity: RequestId) -> None:
        pass
