"""Politeness: robots.txt and the rules that decide when a host may be fetched."""
