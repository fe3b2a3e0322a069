"""Adapters: the kernel's decisions behind the interfaces schedulers already use.

Unlike the rest of ``policy``, an adapter holds state (the current version of
an immutable kernel value), reads a clock and may log; the kernel below it
stays pure, and never imports this package (the import contracts in
pyproject.toml; docs/adapters.md). Nothing is imported here, so ``import
policy.adapters`` loads neither a clock nor ``logging``; import the adapter
itself, for example ``policy.adapters.vllm``.
"""
