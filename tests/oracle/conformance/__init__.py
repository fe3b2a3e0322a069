"""The conformance kit (oracle.conformance) against the kernel and broken implementations."""
