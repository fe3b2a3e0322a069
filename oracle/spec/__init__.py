"""The executable specification: each rule of rotation.md and waiting.md written a second time,
for obviousness, not speed. Imports nothing from policy."""
