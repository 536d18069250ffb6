import shutil
from pathlib import Path

import pytest

from harp_lib.core import audio
from harp_lib.corpora.datasets import load_corpus
from harp_lib.corpora.datasets.common import SourceError, sha256_file
from harp_lib.corpora.datasets.medmosaic import download_medmosaic, prepare_clinical, read_annotations

from datasets_fixtures import CLIN_PARAMS


@pytest.fixture(scope="module")
def clinical_out(clinical_src, tmp_path_factory):
    out = tmp_path_factory.mktemp("corpora") / "clinical"
    prepare_clinical(clinical_src, out, CLIN_PARAMS, progress=False)
    return out


def test_queries_and_ground_truth(clinical_out):
    c = load_corpus(clinical_out, "clinical")
    assert len(c.recordings) == 3 and len(c.queries) == 6
    ans = {q.query_id: q.ground_truth["answer"] for q in c.queries}
    assert ans == {"CC_RES_RES_sample_151-reported": "Yes", "CC_RES_RES_sample_151-exhibited": "Yes",
                   "day1_consultation09-reported": "Yes", "day1_consultation09-exhibited": "No",
                   "GENHX_GENHX_sample_98-reported": "No", "GENHX_GENHX_sample_98-exhibited": "No"}
    for q in c.queries:        # gt ids may be empty only for "No" answers
        assert bool(q.gt_segment_ids) == (q.ground_truth["answer"] == "Yes"), q.query_id
    segs = {s.id: s for s in c.segments}
    q151 = next(q for q in c.queries if q.query_id == "CC_RES_RES_sample_151-exhibited")
    assert [(segs[g].start, segs[g].end) for g in q151.gt_segment_ids] == [(0.5, 1.0), (1.5, 1.9)]
    whole = segs["day1_consultation09_0001"]
    assert (whole.start, whole.end) == (0.0, 2.0) and whole.custom["timing"] == "unannotated"
    info = audio.probe(c.audio_path("GENHX_GENHX_sample_98"))
    assert info.sample_rate == 16000 and info.duration == pytest.approx(2.0, abs=0.01)


def test_annotation_errors_name_the_line(tmp_path):
    p = tmp_path / "res.md"
    p.write_text("- a.wav: coughed [RES_SELF_ACOUSTIC]\nnot an annotation\n")
    with pytest.raises(SourceError, match="line 2"):
        read_annotations(p)
    p.write_text("- a.wav: coughed [RES_SELF_ACOUSTIC] @ 3-1\n")
    with pytest.raises(SourceError, match="bad time span"):
        read_annotations(p)


def test_missing_annotations_explain_the_gap(clinical_src, tmp_path):
    src = tmp_path / "raw"
    shutil.copytree(clinical_src, src)
    (src / "res_annotations.md").unlink()
    with pytest.raises(SourceError, match="res.md.*not public"):
        prepare_clinical(src, tmp_path / "out", CLIN_PARAMS, progress=False)


class FakeHub:
    """Stands in for the hub: serves files of a local folder with their LFS sha256."""

    def __init__(self, root: Path, corrupt: str = ""):
        self.root, self.corrupt = root, corrupt

    def list_files(self, repo_id, revision):
        files = sorted(p for p in self.root.rglob("*") if p.is_file())
        out = [(p.relative_to(self.root).as_posix(), sha256_file(p)) for p in files]
        return out + [("README.md", None)]

    def download(self, repo_id, path, revision, dest):
        dst = Path(dest) / path
        dst.parent.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(self.root / path, dst)
        if path == self.corrupt:
            dst.write_bytes(b"truncated")
        return dst


def test_download_verifies_checksums(clinical_src, tmp_path):
    dest = download_medmosaic(tmp_path / "dl", CLIN_PARAMS, api=FakeHub(clinical_src), progress=False)
    assert (dest / "long_form/Long_Form_metadata.json").exists()
    assert not (dest / "README.md").exists() and not (dest / "res_annotations.md").exists()   # long_form/ only
    assert len((dest / "SHA256SUMS").read_text().splitlines()) == 4
    with pytest.raises(SourceError, match="checksum mismatch.*day1_consultation09"):
        download_medmosaic(tmp_path / "dl2", CLIN_PARAMS, progress=False,
                           api=FakeHub(clinical_src, corrupt="long_form/day1_consultation09.wav"))
    # a file changed after download is caught when preparing
    shutil.copyfile(clinical_src / "res_annotations.md", dest / "res_annotations.md")
    (dest / "long_form/GENHX_GENHX_sample_98.wav").write_bytes(
        (clinical_src / "long_form/day1_consultation09.wav").read_bytes())
    with pytest.raises(SourceError, match="checksum mismatch"):
        prepare_clinical(dest, tmp_path / "out", CLIN_PARAMS, progress=False)
