"""The paper's corpora, prepared into the benchmark layout (``harp prepare``).

* emotion  — LongEmo from MSP-Podcast v2.0 + MSP-Conversation v2.0 + NaturalVoices (:mod:`.longemo`)
* clinical — MedMosaic long-form consultations (:mod:`.medmosaic`)
* song     — SongEval medleys (:mod:`.songeval`)

:func:`load_corpus` reads any prepared domain folder back as records.  Submodules are
imported on use so ``import harp_lib.corpora.datasets`` stays light.
"""
from __future__ import annotations

from harp_lib.corpora.datasets.loaders import Corpus, CorpusError, load_corpus

__all__ = ["Corpus", "CorpusError", "load_corpus"]
