"""perfplay case runners: configs, launch, training, monitors and results.

Importable without torch or Ansible; torch is imported lazily by the training code.
"""

__version__ = "0.1.0"
