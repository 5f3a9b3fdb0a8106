"""jethexa_dynamics.hardware."""
