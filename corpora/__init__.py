"""Bundled corpora and question sets, and loaders for standard formats."""
