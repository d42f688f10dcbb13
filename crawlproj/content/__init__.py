"""Content handling: what a fetched page says (links, title, text)."""
