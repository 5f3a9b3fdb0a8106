"""jethexa_dynamics.sim."""
