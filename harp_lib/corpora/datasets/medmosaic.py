"""MedMosaic long-form consultations: the paper's clinical domain (CC BY 4.0).

Raw layout (``datasets.clinical.src``), as published in ``long_form/`` of the HF dataset::

    long_form/Long_Form_metadata.json   one MCQ per consultation: question, options, ground_truth,
                                        difficulty_level, audio_path
    long_form/<episode>.wav             106 consultations (episode id = WAV stem)
    SHA256SUMS                          written by :func:`download_medmosaic`, checked on re-runs
    res_annotations.md                  respiratory-event annotations (the paper's ``res.md``)

The paper's queries need ``res.md``: manual annotations of respiratory events that are not in
the paper's repository and have no documented source.  Without it the clinical ground truth
cannot be rebuilt; :func:`read_annotations` documents the format so a licensed user can write
or obtain it.  One line per annotated consultation::

    - CC_RES_RES_sample_151.wav: Patient (speaker) coughed [RES_SELF_ACOUSTIC]
    - day1_consultation09: reports a sore throat and cough [RES_SELF_REPORTED] @ 61.0-64.5, 130-131

Group in brackets; optional ``@ t0-t1, ...`` spans (seconds) say where the evidence is.
Consultations absent from the file are ``NON_RES``.  Two yes/no queries per consultation:
``reported`` (Yes iff the group is not NON_RES) and ``exhibited`` (Yes iff the group is one of
``RES_SELF_ACOUSTIC`` / ``RES_PROXY_SPEAKER_COUGH``).
"""
from __future__ import annotations

import json
import re
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Optional

from tqdm.auto import tqdm

from harp_lib.core.atomic import write_text
from harp_lib.core.schema import Query, Recording, Segment
from harp_lib.corpora.datasets.common import (Expected, SourceError, check_source, copy_recording, require_source,
                     sha256_file, write_corpus)

__all__ = ["ClinicalParams", "Annotation", "MedMosaicSource", "read_annotations", "prepare_clinical",
           "download_medmosaic", "verify_checksums", "clinical_expected"]

MEDMOSAIC_URL = "https://huggingface.co/datasets/icml-anon-submission/medmosaic-dataset (long_form/, CC BY 4.0)"
NON_RES = "NON_RES"


@dataclass(frozen=True)
class ClinicalParams:
    """Knobs of the clinical corpus (params.yaml ``datasets.clinical``)."""
    src: str = "data/raw/medmosaic"
    repo_id: str = "icml-anon-submission/medmosaic-dataset"
    revision: Optional[str] = None          # pin a commit for a byte-identical download
    subdir: str = "long_form"
    metadata: str = "long_form/Long_Form_metadata.json"
    annotations: str = "res_annotations.md"
    exhibited_groups: tuple = ("RES_SELF_ACOUSTIC", "RES_PROXY_SPEAKER_COUGH")
    reported_question: str = "Did the patient report any respiratory symptoms during the consultation?"
    exhibited_question: str = "Were respiratory symptoms exhibited during the consultation?"
    sample_rate: int = 16000
    audio: str = "convert"                  # convert (16 kHz mono WAV) | link (hard-link originals)

    def __post_init__(self):
        object.__setattr__(self, "exhibited_groups", tuple(self.exhibited_groups))


@dataclass(frozen=True)
class Annotation:
    """One line of the respiratory-event annotations."""
    episode: str
    text: str
    group: str
    spans: tuple = ()       # ((t0, t1), ...) in seconds, optional


def clinical_expected(p: ClinicalParams) -> list[Expected]:
    return [Expected(p.metadata, "MedMosaic long-form metadata", MEDMOSAIC_URL + "; or run "
                     "`harp prepare clinical --download` on a machine with hub access"),
            Expected(p.subdir, "MedMosaic long-form consultations", MEDMOSAIC_URL, glob="*.wav"),
            Expected(p.annotations, "respiratory-event annotations (the paper's res.md)",
                     "not public: the paper's res.md is not in its repository; ask the authors or "
                     "annotate the consultations yourself in the format of docs/paper.md")]


_LINE = re.compile(r"^\s*(?:[-*]\s+)?`?(?P<file>[\w.\-]+?)(?:\.wav)?`?\s*[:|]\s*(?P<text>.*?)\s*"
                   r"\[(?P<group>[A-Z][A-Z0-9_]*)\]\s*(?:@\s*(?P<spans>.*))?$")


def read_annotations(path) -> dict[str, Annotation]:
    """Parse a res.md-style annotation file (blank lines, headings and comments are skipped).

    >>> import tempfile, os
    >>> p = os.path.join(tempfile.mkdtemp(), "res.md")
    >>> _ = open(p, "w").write("# RES\\n- a.wav: Patient coughed [RES_SELF_ACOUSTIC] @ 1-2.5\\n")
    >>> read_annotations(p)["a"].spans
    ((1.0, 2.5),)
    """
    path = Path(path)
    out: dict[str, Annotation] = {}
    for i, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1):
        s = line.strip()
        if not s or s.startswith(("#", "<!--", "|---", "```")):
            continue
        m = _LINE.match(s)
        if not m:
            raise SourceError(f"{path} line {i}: cannot read {s!r}; expected "
                              f"'- <file>.wav: <annotation> [GROUP]' (optionally '@ t0-t1, ...')")
        spans = []
        for part in filter(None, (x.strip() for x in (m.group("spans") or "").split(","))):
            mm = re.fullmatch(r"(\d+(?:\.\d+)?)\s*-\s*(\d+(?:\.\d+)?)", part)
            if not mm or float(mm.group(2)) <= float(mm.group(1)):
                raise SourceError(f"{path} line {i}: bad time span {part!r} (write t0-t1 in seconds)")
            spans.append((float(mm.group(1)), float(mm.group(2))))
        ep = m.group("file")
        if ep in out:
            raise SourceError(f"{path} line {i}: {ep} is annotated twice")
        out[ep] = Annotation(ep, m.group("text").strip(), m.group("group"), tuple(spans))
    return out


class MedMosaicSource:
    """Reads a raw MedMosaic long-form folder.

    >>> # [item["episode"] for item in MedMosaicSource("data/raw/medmosaic").items()]
    """

    def __init__(self, root, params: ClinicalParams = ClinicalParams()):
        self.root, self.params = Path(root), params

    def check(self) -> list[str]:
        return check_source(self.root, clinical_expected(self.params), "MedMosaic")

    def items(self) -> list[dict]:
        """Metadata entries with ``episode`` (WAV stem) and ``path``, sorted by episode."""
        p = self.root / self.params.metadata
        data = json.loads(p.read_text(encoding="utf-8"))
        rows = list(data.values()) if isinstance(data, dict) else list(data)
        out = {}
        for k, row in enumerate(rows):
            ap = row.get("audio_path") or row.get("file_name")
            if not ap:
                raise SourceError(f"{p}: item {k} has no audio_path")
            wav = self.root / self.params.subdir / Path(ap).name
            ep = wav.stem
            if not wav.exists():
                raise SourceError(f"{p}: item {k} names {ap} but {wav} is missing; re-download {MEDMOSAIC_URL}")
            out[ep] = {"episode": ep, "path": wav, **{kk: row.get(kk) for kk in
                       ("question", "options", "ground_truth", "difficulty_level")}}
        return [out[k] for k in sorted(out)]


def prepare_clinical(src, out, params: ClinicalParams = ClinicalParams(), *, progress: bool = True) -> dict:
    """Build the clinical domain folder ``out`` from a raw MedMosaic folder ``src``."""
    p, out, root = params, Path(out), Path(src)
    require_source(root, clinical_expected(p), "MedMosaic")
    sums = root / "SHA256SUMS"
    if sums.exists():
        bad = verify_checksums(root, sums)
        if bad:
            raise SourceError(f"MedMosaic at {root}: checksum mismatch for {bad[:5]}; re-download them")
    items = MedMosaicSource(root, p).items()
    anns = read_annotations(root / p.annotations)
    unknown = sorted(set(anns) - {it["episode"] for it in items})
    if unknown:
        raise SourceError(f"{root / p.annotations}: annotated consultations {unknown[:5]} are not in "
                          f"{p.metadata}; fix the file names")
    recs, segs, queries = [], [], []
    for it in tqdm(items, desc="medmosaic", disable=not progress):
        ep = it["episode"]
        ext = ".wav" if p.audio == "convert" else it["path"].suffix
        rel = f"recordings/{ep}{ext}"
        dur = copy_recording(it["path"], out / rel, p.sample_rate, mode=p.audio)
        recs.append(Recording(ep, "clinical", rel, dur, p.sample_rate,
                              custom={"mcq": {k: it[k] for k in ("question", "options", "ground_truth",
                                                                 "difficulty_level")}}))
        ann = anns.get(ep, Annotation(ep, "", NON_RES))
        reported = ann.group != NON_RES
        exhibited = ann.group in p.exhibited_groups
        ids: list[str] = []
        if reported:
            spans = ann.spans or ((0.0, dur),)
            for k, (t0, t1) in enumerate(spans, 1):
                if t0 >= dur:
                    raise SourceError(f"{root / p.annotations}: span {t0}-{t1} s of {ep} starts after "
                                      f"the end of the recording ({dur:.1f} s)")
                sid = f"{ep}_{k:04d}"
                ids.append(sid)
                segs.append(Segment(sid, ep, t0, min(t1, dur), None, "",
                                    labels={"events": ["cough"]} if exhibited else {},
                                    custom={"group": ann.group, "annotation": ann.text,
                                            "timing": "annotated" if ann.spans else "unannotated",
                                            "reported_symptom": True, "exhibited_event": exhibited}))
        info = {"group": ann.group, "annotation": ann.text}
        for qtype, question, yes in (("reported", p.reported_question, reported),
                                     ("exhibited", p.exhibited_question, exhibited)):
            queries.append(Query(f"{ep}-{qtype}", "clinical", ep, qtype, question,
                                 ground_truth={"answer": "Yes" if yes else "No"},
                                 judge_info={"type": "yes_no", **info},
                                 gt_segment_ids=tuple(ids) if yes else ()))
    return write_corpus(out, recs, segs, queries, {
        "corpus": "MedMosaic long-form", "source": str(root), "params": asdict(p),
        "note": "GT segments without annotated spans cover the whole consultation (timing unknown)"})


def verify_checksums(root, sums_file) -> list[str]:
    """Files whose sha256 differs from ``sums_file`` (``<hex>  <relative path>`` lines)."""
    root, bad = Path(root), []
    for line in Path(sums_file).read_text().splitlines():
        if line.strip():
            digest, rel = line.split(None, 1)
            f = root / rel.strip()
            if not f.exists() or sha256_file(f) != digest:
                bad.append(rel.strip())
    return bad


def download_medmosaic(dest, params: ClinicalParams = ClinicalParams(), *, api=None,
                       progress: bool = True) -> Path:
    """Download ``long_form/`` of MedMosaic and verify every file's sha256 against the hub's LFS hash.

    Needs hub access (``huggingface_hub``, imported here only).  ``api`` may be an object with
    ``list_files(repo_id, revision) -> [(path, sha256 or None)]`` and
    ``download(repo_id, path, revision, dest) -> local path`` (used by the tests).
    Writes ``SHA256SUMS`` so later offline runs re-check the files.
    """
    p, dest = params, Path(dest)
    api = api or _HubApi()
    files = [(f, h) for f, h in api.list_files(p.repo_id, p.revision) if f.startswith(p.subdir + "/")]
    if not files:
        raise SourceError(f"{p.repo_id}: no files under {p.subdir}/ at revision {p.revision or 'main'}")
    lines, bad = [], []
    for rel, expected in tqdm(sorted(files), desc="medmosaic download", disable=not progress):
        local = Path(api.download(p.repo_id, rel, p.revision, dest))
        got = sha256_file(local)
        if expected and got != expected:
            bad.append(f"{rel} (expected {expected[:12]}…, got {got[:12]}…)")
        lines.append(f"{got}  {rel}")
    if bad:
        raise SourceError("checksum mismatch after download: " + "; ".join(bad) + " — delete and retry")
    write_text(dest / "SHA256SUMS", "\n".join(lines) + "\n")
    return dest


class _HubApi:
    """The real hub, through huggingface_hub (lazy import; never used offline)."""

    def list_files(self, repo_id, revision):
        from huggingface_hub import HfApi  # optional: huggingface_hub (extra paper), online only
        tree = HfApi().list_repo_tree(repo_id, repo_type="dataset", revision=revision,
                                      recursive=True, expand=True)
        out = []
        for e in tree:
            if getattr(e, "size", None) is None and not hasattr(e, "lfs"):
                continue  # folders
            lfs = getattr(e, "lfs", None)
            out.append((e.path, getattr(lfs, "sha256", None) if lfs else None))
        return out

    def download(self, repo_id, path, revision, dest):
        from huggingface_hub import hf_hub_download  # optional: huggingface_hub (extra paper), online only
        return hf_hub_download(repo_id, path, repo_type="dataset", revision=revision, local_dir=str(dest))
