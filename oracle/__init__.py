"""The oracle: scenario files, the replay harness and the command line."""
