"""`quotaplane stream`: the policies on Spark Structured Streaming over a landing directory."""
