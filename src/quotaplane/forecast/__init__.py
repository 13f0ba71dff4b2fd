"""What runs out next: time-to-limit forecasts per volume and per backlog (docs/forecast.md)."""
