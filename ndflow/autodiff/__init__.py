"""Reverse mode (tapes), custom gradients and the gradient checker."""
