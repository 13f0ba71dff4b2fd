"""A real Apache Pulsar for the tests: a standalone started from its Maven artifacts
(deploy/pulsar/pom.xml)."""
