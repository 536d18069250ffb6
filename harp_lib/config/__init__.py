"""``params.yaml`` -> typed configuration, the seven named setups, and the backend registry.

``params.yaml`` holds every knob.  Its ``profile`` key picks an overlay from ``profiles``
(``mini`` default, ``ci``, ``paper``) which is deep-merged over the base sections, so
``dvc exp run -S profile=paper`` switches everything at once.

This package is the config layer's public face (``from harp_lib.config import load_config``);
its modules, lowest first:

* :mod:`~harp_lib.config.errors`: :class:`ConfigError` and the "did you mean" hint;
* :mod:`~harp_lib.config.setups`: the setups A1..A7 (:data:`SETUPS`, :func:`get_setup`) and :data:`TOOLS`;
* :mod:`~harp_lib.config.params`: the typed schema, one frozen dataclass per section (:class:`Params`);
* :mod:`~harp_lib.config.validate`: :func:`validate_params` and the schema as Markdown;
* :mod:`~harp_lib.config.loading`: :func:`load_config`, :class:`Config`, overrides, :func:`repo_root`;
* :mod:`~harp_lib.config.registry`: the backend registry (:func:`register`, :func:`create_backend`).

>>> SETUPS["A5"].tools
('time', 'keyword', 'label', 'text_emb', 'audio_emb', 'domain_emb')
>>> SETUPS["A4"].strip_domain, SETUPS["A4"].attach_audio
(True, True)
"""
from __future__ import annotations

# re-exported: every name importers use from harp_lib.config (the package's public API)
from harp_lib.config.errors import ConfigError  # noqa: F401
from harp_lib.config.setups import SETUP_ORDER, SETUPS, TOOLS, Setup, UnknownSetupError, get_setup  # noqa: F401
from harp_lib.config.params import (DOMAINS, AgentParams, AgentRunParams, BackendName, BenchmarkEmotionParams,  # noqa: F401
                                    BenchmarkParams, BenchParams, EvaluateParams, ExtractBackendsParams,
                                    ExtractMetricsParams, ExtractParams, ExtractSoundEventsParams, HumanParams,
                                    LLMOfflineParams, LLMParams, LLMRowsParams, Num, Params, PathsParams,
                                    ScaleParams, Section, rule)
from harp_lib.config.validate import schema_keys, schema_markdown, validate_params  # noqa: F401
from harp_lib.config.loading import Config, deep_merge, load_config, parse_override, positive_int, repo_root  # noqa: F401
from harp_lib.config.registry import (BACKEND_MODULES, BackendError, BackendOptionError, backend_modules,  # noqa: F401
                                      check_backend_options, create_backend, get_backend, list_backends,
                                      register)

__all__ = ["Setup", "SETUPS", "SETUP_ORDER", "TOOLS", "Config", "ConfigError", "Params", "load_config",
           "validate_params", "parse_override", "positive_int", "schema_markdown", "schema_keys", "deep_merge", "register", "backend_modules",
           "get_backend", "create_backend", "check_backend_options", "list_backends", "BackendError",
           "BackendOptionError", "repo_root"]
