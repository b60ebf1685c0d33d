"""Reporters: formatters only; they never compute."""
