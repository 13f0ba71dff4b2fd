"""PIP-385 producer throttle notices: the broker's notices, receipts and pauses (docs/notices.md)."""
