"""Registers the ``judge`` backends: ``rule`` (:mod:`.rule_judge`) and ``llm`` (:mod:`.llm_judge`).

Listed in ``harp_lib/__init__.py`` (``config.backend_modules``) and imported by :func:`harp_lib.config.get_backend` on first lookup.

>>> from harp_lib.config import list_backends
>>> [n for s, n in list_backends("judge")]
['llm', 'rule']
"""
from harp_lib.evaluate import llm_judge, rule_judge  # noqa: F401  (the @register decorators run on import)
