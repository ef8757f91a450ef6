"""The conductor: runs the build and resize task flows."""
