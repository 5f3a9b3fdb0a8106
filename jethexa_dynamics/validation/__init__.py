"""jethexa_dynamics.validation."""
