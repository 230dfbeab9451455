"""Device backends, one package each behind a compile/load/launch interface."""
