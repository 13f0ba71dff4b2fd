"""On-demand performance runs (`make bench`); not part of `make test`."""
