"""ragdoctor: the command-line front door over rag/, eval/ and diagnostics/."""
__version__ = "0.1.0"
