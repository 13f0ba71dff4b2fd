"""Configuration: Kafka-style `.properties` files and per-policy settings."""
