"""jethexa_dynamics.control."""
