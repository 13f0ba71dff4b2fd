"""Sub-commands of the `quotaplane` CLI; each module exposes `register(subparsers)`."""
