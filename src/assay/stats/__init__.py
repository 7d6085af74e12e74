"""Pure statistics: arrays in, results out. No I/O, no global state."""
