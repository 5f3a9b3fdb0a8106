"""jethexa_dynamics.nodes."""
