"""echo: run an unchanged MPI program with every rank transparently cloned."""

__version__ = "0.1.0"
