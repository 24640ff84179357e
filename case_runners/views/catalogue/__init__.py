"""The case catalogue (`perfplay cases`): every case per task with the vendors, hardware and scales that have
configs, as a typed document (build.py), rendered as a text table or the Markdown of docs/catalogue.md (render.py).
Reads the case and vendor folders only: no Ansible, no torch."""
