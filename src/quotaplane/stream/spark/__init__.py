"""The Spark side of `quotaplane stream`: the landing source and the micro-batch step."""
