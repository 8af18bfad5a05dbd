"""An example protomcp tool plugin (see tools.py and ../pyproject.toml)."""
