"""Reading answers: moved to :mod:`harp_lib.core.answer_format` (the one answer-format module).

This name stays importable for notebooks and older code; everything is the same object.
"""
from harp_lib.core.answer_format import *  # noqa: F401,F403
from harp_lib.core.answer_format import __all__  # noqa: F401
