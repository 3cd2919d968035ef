"""Training state: Variables, Modules and optimizers."""
