"""Offline extraction (HARP stage 1 + stage 2): segment, transcribe, embed and label recordings.

Importing this package is cheap; models load only when a backend is created through the
registry (``harp_lib.config.create_backend``), which imports :mod:`harp_lib.extract.backends`.

* :mod:`.turns`     – chunk / merge rules for speaker turns and song chunks (paper §2.1)
* :mod:`.vad`, :mod:`.diarization`, :mod:`.songs`, :mod:`.asr` – stage-1 generic experts
* :mod:`.embedders` – text / audio / domain embedders (``embed(...) -> float32 (n, dim)``)
* :mod:`.labelers`  – the emotion labeler; :mod:`.cough_labeler`, :mod:`.aesthetics_labeler`
  (over :mod:`.aesthetics_measures`) – cough and music-aesthetics labelers
* :mod:`.paper`     – the paper's models (optional extras; clear errors when missing)
* :mod:`.pipeline`  – ``harp extract`` (stages: :mod:`.stage1_generic`, :mod:`.stage2_domain`; steps:
  :mod:`.turn_steps`; cache: :mod:`.stage_cache`); :mod:`.quality` – metrics against ground truth
"""
