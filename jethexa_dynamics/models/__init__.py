"""jethexa_dynamics.models."""
