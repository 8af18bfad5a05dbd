"""Command line: the click commands and what they present (install, doctor, plugins, list/call output).
May import every other layer of the host; nothing imports it but `__main__`."""
