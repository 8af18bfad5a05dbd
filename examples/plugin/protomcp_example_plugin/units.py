"""Plain Python the tools import relatively: a plugin is an ordinary package."""

LENGTHS_IN_METRES = {"m": 1.0, "km": 1000.0, "cm": 0.01, "mi": 1609.344, "ft": 0.3048, "in": 0.0254}
