import pytest

from harp_lib.config import (SETUPS, BackendError, ConfigError, get_backend, get_setup, load_config,
                             register)


def test_seven_setups_derive_tools_and_modalities():
    assert list(SETUPS) == ["A1", "A2", "A3", "A4", "A5", "A6", "A7"]
    assert SETUPS["A1"].tools == ("time", "keyword", "label")
    assert SETUPS["A2"].tools == ("text_emb", "audio_emb", "domain_emb")
    assert set(SETUPS["A3"].tools) == set(SETUPS["A1"].tools) | set(SETUPS["A2"].tools)
    assert not SETUPS["A3"].attach_audio and SETUPS["A3"].show_metadata
    assert SETUPS["A4"].attach_audio and SETUPS["A4"].strip_domain and SETUPS["A4"].skip_faithful
    assert SETUPS["A5"].attach_audio and not SETUPS["A5"].strip_domain
    assert SETUPS["A6"].oracle and SETUPS["A6"].strip_domain
    assert SETUPS["A7"].oracle and SETUPS["A7"].show_metadata and not SETUPS["A7"].skip_faithful
    assert get_setup("R5") is SETUPS["A5"] and get_setup("hybrid_all") is SETUPS["A5"]
    with pytest.raises(KeyError, match="unknown setup"):
        get_setup("A9")


def test_repo_params_profiles():
    cfg = load_config()
    assert cfg.profile in ("mini", "ci", "paper")
    assert load_config(profile="mini").get("agent.top_k") == 3
    assert load_config(profile="ci").get("benchmark.profile") == "ci"
    paper = load_config(profile="paper")
    assert paper.get("agent.planner") == "llm"
    assert paper.get("agent.top_k") == 3  # base value survives the overlay


def test_unknown_profile_and_key(tmp_path):
    p = tmp_path / "params.yaml"
    p.write_text("profile: mini\na: {b: 1}\nprofiles: {mini: {a: {c: 2}}}\n")
    cfg = load_config(p)
    assert cfg.get("a.b") == 1 and cfg.get("a.c") == 2 and cfg.a == {"b": 1, "c": 2}
    with pytest.raises(ConfigError, match="no key 'a.z'"):
        cfg.get("a.z")
    with pytest.raises(ConfigError, match="unknown profile 'gpu'"):
        load_config(p, profile="gpu")


def test_registry():
    @register("test-stage", "thing")
    class Thing:
        def __init__(self, x=1):
            self.x = x
    assert get_backend("test-stage", "thing") is Thing
    from harp_lib.config import create_backend
    assert create_backend("test-stage", {"name": "thing", "x": 5}).x == 5
    with pytest.raises(BackendError, match="unknown test-stage backend 'nope'.*thing"):
        get_backend("test-stage", "nope")
