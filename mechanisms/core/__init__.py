"""The core layer: the Mechanism/Release interface, guarantees as data, input validation,
quantile arithmetic, order statistics and the finite domain.  Imports nothing above it."""
