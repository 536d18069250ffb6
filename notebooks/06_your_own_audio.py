# ---
# jupyter:
#   kernelspec:
#     display_name: Python 3 (ipykernel)
#     language: python
#     name: python3
# ---

# %% [markdown]
# # 06 · Your own audio: ingest a recording, ask it questions
#
# The benchmark notebooks (00-05) run HARP on generated or corpus recordings with known answers.
# This one runs it on **your** recordings, with **your** questions -- no manifest, query type or
# ground truth to write.  It is the notebook form of
#
#     harp ingest my_call.mp3 --domain speech
#     harp ask my_call "When does the second speaker first talk?"
#
# * `ingest` converts each file once to 16 kHz mono under `<paths.data>/user/<collection>/`
#   (never under `results/`), gives it a safe id from its file name, then extracts (VAD,
#   diarization, ASR, embeddings, labels) and indexes it.  Speech and clinical recordings also get
#   the overlap detector (pyannote segmentation-3.0): where two people talk at once both are named
#   (`ingest(..., overlap=None)` or `harp ingest --overlap off` turns it off).
# * `ask` prints the plan, the evidence (times, speakers, transcript, labels), the answer and its
#   rationale.  Answers are cached on content: an edited question is answered afresh.
#
# By default it uses the 30-second two-speaker phone call shipped in the pyannote.audio wheel
# (`scripts/bootstrap.sh` puts it in `.cache/harp/pyannote_sample/`).  Its reference transcript
# says Diane says "Hello?" at 6.7 s, Sheila first answers at 7.6 s, and Sheila mentions Chicago at
# about 14.4-17.8 s.  What each domain expects, and what the offline models can and cannot hear:
# `docs/your_own_audio.md`.

# %% tags=["parameters"]
profile = None  # type: Optional[str]  params.yaml profile (None: $HARP_PROFILE, else params.yaml `profile`)
audio_paths = None  # type: Optional[list]  list of audio files; None: the pyannote sample call
kind = "speech"  # type: str  what the recordings are (harp ingest --domain): speech (conversations, podcasts) | clinical | song
collection = "notebook"  # type: str  the collection the recordings are ingested into (data/user/<collection>)
setup = "A5"  # type: str  A1..A7: the retrieval x evidence setup that answers
questions = ["When does the second speaker first talk?", "How many speakers are there?", "Who is speaking at 0:20?", "When does someone mention Chicago?", "How does the first speaker feel?"]  # type: list  questions asked of the collection, in any wording

# %%
import pandas as pd

from harp_lib.ownaudio import ingest as userdata
from harp_lib.stages.common import config
from harp_lib.stages.pages import ask, ingest
from harp_lib.app.notebook import check_parameters

check_parameters(globals())   # an unknown or out-of-range papermill -p is an error

cfg = config(profile)
paths = list(audio_paths or [userdata.sample_recording(cfg)])
recs = ingest(paths, kind, collection=collection, cfg=cfg)
# (`converted` says whether this call wrote the 16 kHz copy: False when the file was ingested before)
pd.DataFrame([r.to_dict() for r in recs])[["id", "domain", "duration", "segments", "speakers", "error"]]

# %% [markdown]
# ## The recording as HARP sees it
# One row per extracted segment: who (diarization), when, what (offline ASR) and the labels.

# %%
from harp_lib.retrieval.index import SegmentIndex

rec_id = recs[0].id
ix = SegmentIndex.load(userdata.collection(cfg, collection).index_dir(recs[0].domain))
pd.DataFrame([{"start": s.start, "end": s.end, "speaker": s.speaker, "text": s.text,
               "label": s.labels.get("primary")} for s in ix.segments(rec_id)])

# %% [markdown]
# ## Ask
# Each answer shows its plan, the evidence it rests on, and the rationale.

# %%
# use_cache=False: answered afresh (and the cache rewritten), so this page is the same on every run
answers = [ask(rec_id, q, setup=setup, collection=collection, cfg=cfg, use_cache=False) for q in questions]
for a in answers:
    print(a.render(), end="\n\n")

# %%
pd.DataFrame([{"question": a.question, "answer": a.answer, "how": a.intent, "cached": a.cached}
              for a in answers])

# %% [markdown]
# ## Asked again, the identical question is served from the cache; an edited one is not
# The cache key is the content (recording, question, setup, agent, reference clips, code version):
# the edited question has its own key, so the first time it is asked it is answered afresh.

# %%
again = ask(rec_id, questions[0], setup=setup, collection=collection, cfg=cfg)
edited = ask(rec_id, questions[0].replace("second", "first"), setup=setup, collection=collection, cfg=cfg)
pd.DataFrame([{"question": x.question, "answer": x.answer, "cache key": x.key[:12],
               "same key as the first round": x.key == answers[0].key} for x in (again, edited)]
             ).assign(**{"served from the cache": [again.cached, "-"]})
