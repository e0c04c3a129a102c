"""Streamlit page code for the dashboard (app.py is the entry point). Layout only: every number on a page comes from
ragdoctor.dashboard.data, eval/ or diagnostics/."""
