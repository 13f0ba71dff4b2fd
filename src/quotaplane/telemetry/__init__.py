"""Telemetry: schemas declared once, readers, validation and quarantine."""
