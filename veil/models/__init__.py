"""Offline model locators: pre-trained weights that ship inside registry packages (no hub needed)."""
