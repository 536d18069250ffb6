"""Builders of tiny raw corpora in each on-disk format (seconds of audio), used by conftest.py."""
from __future__ import annotations

import csv
import json
import math
import subprocess
from pathlib import Path


from harp_lib.core import audio
from harp_lib.corpora.datasets.longemo_params import EmotionParams
from harp_lib.corpora.datasets.medmosaic import ClinicalParams
from harp_lib.corpora.datasets.songeval import SongParams
from harp_testing import tone as shared_tone

SR = 16000


def tone(sec, f, sr=SR, seed=0):
    """A sine with N(0, 0.01) noise (:func:`harp_testing.tone`)."""
    return shared_tone(sec, f, sr=sr, noise=0.01, seed=seed)


# ----------------------------------------------------------------------------- SongEval
SONG_PARAMS = SongParams(src="unused", min_song_sec=5.0, max_song_sec=9.0, expected_songs=None, n_tracks=1,
                         crossfade_sec=1.0, snippet_sec=1.0, snippet_margin_sec=1.0,
                         method_counts={"time": 1, "position": 1, "audio": 1}, time_step_sec=1.0,
                         time_margin_sec=1.0)


def make_songeval(root: Path) -> Path:
    root.mkdir(parents=True, exist_ok=True)
    (root / "mp3").mkdir(exist_ok=True)
    rows, langs = [], []
    base = [4.6, 4.5, 3.0, 2.2, 1.4, 3.9, 3.5, 2.8]   # grand means; 6 and 7 are filtered out below
    for i, m in enumerate(base):
        name = f"mp3/song_{i:02d}.wav"
        dur = 3.0 if i == 7 else 7.0                 # song 7 is too short
        audio.write(root / name, tone(dur, 220 + 40 * i, seed=i), SR)
        if i < 2:                                    # two real mp3s, decoded through ffmpeg
            mp3 = f"mp3/song_{i:02d}.mp3"
            subprocess.run(["ffmpeg", "-v", "error", "-y", "-i", str(root / name), str(root / mp3)], check=True)
            (root / name).unlink()
            name = mp3
        raters = [{d: round(min(5, max(1, m + off)), 2) for d in
                   ("Coherence", "Musicality", "Memorability", "Clarity", "Naturalness")}
                  for off in (-0.2, 0.0, 0.1, 0.1)]
        rows.append({"file_name": name, "gender": "female" if i % 2 else "male", "annotation": raters})
        langs.append({"file_name": name, "language": "zh" if i == 6 else "en", "probability": 0.9})
    (root / "metadata.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows))
    (root / "languages.jsonl").write_text("".join(json.dumps(r) + "\n" for r in langs))
    return root


# ----------------------------------------------------------------------------- MedMosaic
CLIN_PARAMS = ClinicalParams(src="unused")


def make_medmosaic(root: Path) -> Path:
    lf = root / "long_form"
    lf.mkdir(parents=True, exist_ok=True)
    items = []
    for i, ep in enumerate(["CC_RES_RES_sample_151", "GENHX_GENHX_sample_98", "day1_consultation09"]):
        audio.write(lf / f"{ep}.wav", tone(2.0, 300 + 50 * i, sr=8000, seed=i), 8000)   # 8 kHz: resampled
        items.append({"question": f"Q{i}?", "options": ["(a) yes", "(b) no"], "ground_truth": "(a)",
                      "difficulty_level": "easy", "audio_path": f"long_form/{ep}.wav"})
    (lf / "Long_Form_metadata.json").write_text(json.dumps(items, indent=1))
    (root / "res_annotations.md").write_text(
        "# Respiratory events\n\n"
        "- CC_RES_RES_sample_151.wav: Patient (speaker) coughed [RES_SELF_ACOUSTIC] @ 0.5-1.0, 1.5-1.9\n"
        "- day1_consultation09.wav: reports a cough last week [RES_SELF_REPORTED]\n")
    return root


# ----------------------------------------------------------------------------- LongEmo
EMO_PARAMS = EmotionParams(
    src="unused", st_context_sec=16.0, ctx_sec=8.0, ct_window_sec=6.0, ct_step_sec=2.0, ct_spk_share=0.6,
    ct_nms_sec=6.0, multi_window_sec=12.0, multi_step_sec=6.0, multi_min_cover_sec=3.0,
    comparison_pad_sec=8.0, comparison_min_side_sec=1.0, locate_max_expand_sec=20.0, cluster_span_sec=30.0,
    cluster_pad_sec=3.0, clip_min_sec=3.0, clip_max_sec=5.0, emotion_clip_max_sec=3.0)
NAMES = {"N": "Neutral", "H": "Happy", "S": "Sad", "A": "Angry", "U": "Surprise"}
# (episode, segment number) -> consensus code; speaker 101 = odd numbers, 102 = even
CODES = {1: {3: "H", 5: "H", 7: "H", 9: "S", 11: "H", 13: "N", 15: "A",
             4: "N", 6: "S", 8: "A", 10: "N", 12: "S", 14: "U"},
         2: {3: "S", 5: "A", 7: "N", 9: "S", 11: "N", 13: "A", 15: "S",
             4: "H", 6: "H", 8: "H", 10: "A", 12: "H", 14: "S"}}
WORDS = ["garden roses bloom early spring", "football match tickets stadium crowd", "weather storm rain forecast",
         "cooking pasta recipe kitchen sauce", "music concert guitar band", "travel flights airport delays"]


def make_longemo(root: Path) -> Path:
    pod, conv = root / "msp_podcast_v2.0", root / "msp_conversation_v2.0"
    for d in (root / "podcasts_flac", pod / "Labels", pod / "Transcripts", conv / "Time_Labels"):
        d.mkdir(parents=True, exist_ok=True)
    all_data, seg_map = {}, {}
    cons, det, parts = [], [], []
    for e in (1, 2):
        ep = f"MSP-PODCAST_{e:04d}"
        audio.write(root / "podcasts_flac" / f"{ep}.flac", tone(60.0, 180 + 20 * e, seed=e), SR)
        segs = []
        for i in range(15):
            n = i + 1
            spk = "101" if n % 2 else "102"
            text = f"{WORDS[(n + e) % len(WORDS)]}, and we talked about it for a long while today"
            segs.append({"start": 4.0 * i, "end": 4.0 * i + 4.0, "text": text, "global_speaker2": [int(spk)],
                         "num_speakers": 1, "speech_classification": "Speech", "SNR": 25.0 + n,
                         "gender": "Female" if spk == "101" else "Male",
                         "arousal": 0.5, "valence": 0.8 if spk == "101" else 0.3,
                         "dominance": float("nan") if n == 2 else 0.5})
            code = CODES[e].get(n)
            if code:
                utt = f"{ep}_{n:04d}"
                cons.append({"FileName": utt + ".wav", "EmoClass": code, "EmoAct": 5.0, "EmoVal": 6.0 if code == "H" else 2.5,
                             "EmoDom": 4.0 + (n % 3), "SpkrID": spk, "Gender": segs[-1]["gender"]})
                votes = [NAMES[code]] * 3 + ["Neutral"]
                det += [{"FileName": utt + ".wav", "Worker": w, "EmoClass_Major": v} for w, v in enumerate(votes)]
                (pod / "Transcripts" / f"{utt}.txt").write_text(text + "\n")
                if not (e == 2 and n == 9):              # one utterance found by transcript matching
                    seg_map[utt] = {"Conversation": f"MSP-Conversation_{e:04d}", "Start_Time": 4.0 * i,
                                    "End_Time": 4.0 * i + 4.0}
                parts.append(("Train" if (e == 1 and n == 15) else "Test1", utt + ".wav"))
        all_data[ep] = {str(s_i + 1): s for s_i, s in enumerate(segs)} if e == 2 else segs
    (root / "all_data.json").write_text(json.dumps(all_data))          # writes bare NaN, like the corpus
    for name, rows in (("labels_consensus.csv", cons), ("labels_detailed.csv", det)):
        with open(pod / "Labels" / name, "w", newline="") as fh:
            w = csv.DictWriter(fh, fieldnames=list(rows[0]))
            w.writeheader()
            w.writerows(rows)
    (pod / "Partitions.txt").write_text("".join(f"{s}; {f}\n" for s, f in parts))
    (conv / "partitions.txt").write_text("MSP-Conversation_0001;Test1\nMSP-Conversation_0002;Test1\n"
                                         "MSP-Conversation_0003;Train\n")
    (conv / "Time_Labels/conversations.txt").write_text("MSP-Conversation_0001;0.0;60.0\nMSP-Conversation_0002;0.0;60.0\n")
    (conv / "Time_Labels/segments.json").write_text(json.dumps(seg_map))
    lines = []
    for e in (1, 2):
        for k, (t0, t1) in enumerate(((0.0, 30.0), (30.0, 60.0)), 1):
            pid = f"MSP-Conversation_{e:04d}_{k}"
            lines.append(f"{pid};{t0};{t1}")
            for dim in ("Arousal", "Valence", "Dominance"):
                d = conv / "Traces" / dim
                d.mkdir(parents=True, exist_ok=True)
                with open(d / f"{pid}.csv", "w", newline="") as fh:
                    w = csv.writer(fh)
                    w.writerow(["Central_Time", "Mean", "Annotator_1", "Annotator_2"])
                    for j in range(60):
                        t = t0 + 0.5 * j
                        if dim == "Valence":   # rises 10-16 s, falls 40-46 s, flat elsewhere
                            v = 40 + 30 * min(1, max(0, (t - 10) / 6)) - 30 * min(1, max(0, (t - 40) / 6))
                        else:
                            v = 50 + 2 * math.sin(t)
                        w.writerow([0.5 * j, round(v, 2), round(v - 1, 2), round(v + 1, 2)])
    (conv / "Time_Labels/conversation_parts.txt").write_text("\n".join(lines) + "\n")
    return root


