"""Small network helpers."""
