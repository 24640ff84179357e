"""The host side: the host check (python, devices, data dirs, master port), the device count, and the data and
requirement checks."""
