import dataclasses
from pathlib import Path

import pytest
import yaml

from harp_lib.config import (SETUPS, BackendError, BackendOptionError, ConfigError, Params, get_backend,
                             get_setup, load_config, register)


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


def test_unknown_profile(tmp_path):
    with pytest.raises(ConfigError, match=r"unknown profile 'papr' \(did you mean paper\?\)"):
        load_config(REPO_PARAMS, profile="papr")


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


# --------------------------------------------------------------------------- typed config
REPO_PARAMS = Path(__file__).resolve().parents[1] / "params.yaml"


def _params_file(tmp_path, edit=None, profile_edit=None):
    """A copy of the committed params.yaml with ``edit(raw)`` applied."""
    raw = yaml.safe_load(REPO_PARAMS.read_text())
    if edit:
        edit(raw)
    p = tmp_path / "params.yaml"
    p.write_text(yaml.safe_dump(raw))
    return p


@pytest.mark.parametrize("profile", ["mini", "ci", "paper"])
def test_every_committed_profile_loads_typed(profile):
    cfg = load_config(REPO_PARAMS, profile=profile)
    assert isinstance(cfg.params, Params)
    assert cfg.agent.top_k == cfg.get("agent.top_k") == 3
    assert cfg.extract.metrics.der_collar == cfg.get("extract.metrics.der_collar")
    assert dict(cfg.llm) == cfg.get("llm")                     # sections are read-only mappings too
    assert set(load_config(REPO_PARAMS, profile=profile).data) == set(cfg.data)
    with pytest.raises(dataclasses.FrozenInstanceError):
        cfg.agent.top_k = 5


def test_every_profile_of_the_file_is_validated(tmp_path):
    # a typo in the paper overlay is caught while loading mini
    p = _params_file(tmp_path, lambda r: r["profiles"]["paper"]["agent"].update(plannr="llm"))
    with pytest.raises(ConfigError, match=r"profile 'paper'.*unknown key agent\.plannr \(did you mean agent\.planner\?\)"):
        load_config(p, profile="mini")


@pytest.mark.parametrize("edit, pattern", [
    (lambda r: r["agent"].update(top_kk=2), r"unknown key agent\.top_kk \(did you mean agent\.top_k\?\)"),
    (lambda r: r["extract"]["metrics"].update(der_colar=0.5),
     r"unknown key extract\.metrics\.der_colar \(did you mean extract\.metrics\.der_collar\?\)"),
    (lambda r: r.update(agnet={}), r"unknown key agnet \(did you mean agent\?\)"),
    (lambda r: r["evaluate"]["llm_judges"]["qwen"].update(max_token=9),
     r"unknown key evaluate\.llm_judges\.qwen\.max_token \(did you mean evaluate\.llm_judges\.qwen\.max_tokens\?\)"),
])
def test_unknown_keys_are_errors_naming_the_dotted_key(tmp_path, edit, pattern):
    with pytest.raises(ConfigError, match=pattern):
        load_config(_params_file(tmp_path, edit), profile="mini")


@pytest.mark.parametrize("edit, pattern", [
    (lambda r: r["llm"].update(timeout_sec="soon"), r"llm\.timeout_sec = 'soon' has the wrong type; expected a number"),
    (lambda r: r["agent"].update(top_k=2.5), r"agent\.top_k = 2\.5 has the wrong type; expected an integer"),
    (lambda r: r["agent"].update(hear_with_labelers="yes"), r"agent\.hear_with_labelers = 'yes' has the wrong type; expected true/false"),
    (lambda r: r["extract"].update(metrics=3), r"extract\.metrics = 3 is not a section"),
    (lambda r: r.update(domains="emotion"), r"domains = 'emotion' has the wrong type; expected a list"),
])
def test_wrong_types_name_key_value_and_expected_type(tmp_path, edit, pattern):
    with pytest.raises(ConfigError, match=pattern):
        load_config(_params_file(tmp_path, edit), profile="mini")


@pytest.mark.parametrize("edit, pattern", [
    (lambda r: r["agent"].update(top_k=-1), r"agent\.top_k = -1 is out of range; allowed: >= 1"),
    (lambda r: r["extract"].update(workers=0), r"extract\.workers = 0 is out of range; allowed: >= 1"),
    (lambda r: r["scale"].update(workers=0), r"scale\.workers = 0 is out of range; allowed: >= 1"),
    (lambda r: r["evaluate"].update(locate_tolerance_sec=-3), r"evaluate\.locate_tolerance_sec = -3 is out of range; allowed: >= 0"),
    (lambda r: r["agent"].update(planner="gpt"), r"agent\.planner = 'gpt' is not allowed; choose one of rule, llm"),
    (lambda r: r.update(domains=["emotion", "clinicl"]), r"domains = .*'clinicl' is not allowed; choose from emotion, clinical, song"),
    (lambda r: r.update(setups=["A9"]), r"setups = \['A9'\].*choose from A1, A2"),
    (lambda r: r["evaluate"].update(judges=["qwn"]), r"evaluate\.judges lists 'qwn' \(did you mean qwen\?\)"),
    (lambda r: r["extract"]["fill_gaps_sec"].pop("song"), r"extract\.fill_gaps_sec has no entry for domain 'song'"),
])
def test_out_of_range_values_name_key_value_and_range(tmp_path, edit, pattern):
    with pytest.raises(ConfigError, match=pattern):
        load_config(_params_file(tmp_path, edit), profile="mini")


def test_missing_key_is_an_error(tmp_path):
    with pytest.raises(ConfigError, match=r"missing key agent\.top_k \(an integer\)"):
        load_config(_params_file(tmp_path, lambda r: r["agent"].pop("top_k")), profile="mini")


def test_overrides_are_validated_and_parsed():
    assert load_config(REPO_PARAMS, profile="mini", overrides=["agent.top_k=1"]).agent.top_k == 1
    assert load_config(REPO_PARAMS, profile="mini", overrides={"agent": {"top_k": 2}}).agent.top_k == 2
    with pytest.raises(ConfigError, match=r"agent\.top_k = -1 is out of range"):
        load_config(REPO_PARAMS, profile="mini", overrides=["agent.top_k=-1"])
    with pytest.raises(ConfigError, match=r"not KEY=VALUE"):
        load_config(REPO_PARAMS, profile="mini", overrides=["agent.top_k"])
    with pytest.raises(ConfigError, match=r"agent\.top_k = -1"):
        load_config(REPO_PARAMS, profile="mini").with_overrides({"agent": {"top_k": -1}})


def test_agent_run_params_are_the_agent_section_plus_tie_delta_typed():
    from harp_lib.config import AgentRunParams
    cfg = load_config(REPO_PARAMS, profile="mini")
    p = AgentRunParams.of(cfg)
    assert [f.name for f in dataclasses.fields(p)] == [*cfg.agent, "tie_delta"]
    assert all(getattr(p, k) == v and type(getattr(p, k)) is type(v) for k, v in cfg.agent.items())
    assert p.tie_delta == 0.25 and type(p.tie_delta) is float
    q = p.replace(top_k=7, tie_delta=0.5)
    assert isinstance(q, AgentRunParams) and (q.top_k, q.tie_delta, p.top_k) == (7, 0.5, cfg.agent.top_k)
    assert p.replace() is p
    with pytest.raises(dataclasses.FrozenInstanceError):
        p.top_k = 1


def test_an_unknown_agent_override_is_an_error_naming_it():
    from harp_lib.config import AgentRunParams
    p = AgentRunParams.of(load_config(REPO_PARAMS, profile="mini"))
    with pytest.raises(ConfigError, match=r"^unknown agent parameter 'max_set' \(did you mean 'max_sets'\?\); "
                                          r"agent parameters: planner, answerer, top_k, .*, hearing_cache, tie_delta$"):
        p.replace(top_k=2, max_set=3)
    with pytest.raises(ConfigError, match=r"^unknown agent parameter 'zzz'; agent parameters: planner"):
        p.replace(zzz=1)


def test_no_defaults_in_code():
    cfg = load_config(REPO_PARAMS, profile="mini")
    with pytest.raises(ConfigError, match="has no key 'agent.nope'"):
        cfg.get("agent.nope")
    with pytest.raises(TypeError):
        cfg.get("agent.nope", 3)          # a default in code is not accepted
    # every schema field is required: no dataclass field carries a default
    for sec in (Params, *[t for t in schema_section_types()]):
        assert all(f.default is dataclasses.MISSING and f.default_factory is dataclasses.MISSING
                   for f in dataclasses.fields(sec)), sec


def schema_section_types():
    from harp_lib.config import params
    return [v for v in vars(params).values()
            if isinstance(v, type) and dataclasses.is_dataclass(v) and issubclass(v, params.Section)]


def test_misspelled_backend_option_names_option_and_backend():
    @register("test-stage", "opts")
    class Opts:
        def __init__(self, threshold=0.5):
            self.threshold = threshold
    from harp_lib.config import create_backend
    assert create_backend("test-stage", {"name": "opts", "threshold": 0.2}).threshold == 0.2
    with pytest.raises(BackendOptionError, match=r"test-stage backend 'opts' has no option 'treshold' "
                                                  r"\(did you mean threshold\?\)"):
        create_backend("test-stage", {"name": "opts", "treshold": 0.2})
    # real backends: the agent's planners no longer swallow options
    with pytest.raises(ConfigError, match=r"planner backend 'rule' has no option 'top_k'"):
        create_backend("planner", {"name": "rule", "top_k": 3})


def test_misspelled_extract_option_in_params_fails_when_the_backend_is_built(tmp_path):
    from harp_lib.extract.pipeline import _settings
    from harp_lib.config import create_backend
    p = _params_file(tmp_path, lambda r: r["extract"]["options"]["silero"].update(treshold=0.4))
    st = _settings(load_config(p, profile="mini"), "emotion")
    with pytest.raises(BackendOptionError, match=r"vad backend 'silero' has no option 'treshold'"):
        create_backend("vad", st["vad"])


#: The modules outside harp_lib.config that config may import: the error base
#: :mod:`harp_lib.core.errors` and the typed decoder :mod:`harp_lib.core.typed`, which import nothing
#: of harp_lib but each other (checked below, so the list is no way around the rule).
CONFIG_MAY_IMPORT = ("harp_lib.core.errors", "harp_lib.core.typed")


def _harp_imports(path: Path) -> list[str]:
    import ast
    tree = ast.parse(path.read_text())
    imported = [("." * n.level) + (n.module or "") for n in ast.walk(tree) if isinstance(n, ast.ImportFrom)] + \
               [a.name for n in ast.walk(tree) if isinstance(n, ast.Import) for a in n.names]
    return [m for m in imported if m.startswith(".") or m.split(".")[0] == "harp_lib"]


def imports_above_config(path: Path) -> list[str]:
    """The modules ``path`` imports from harp_lib outside harp_lib.config (and any relative import),
    but those of :data:`CONFIG_MAY_IMPORT`."""
    return [m for m in _harp_imports(path) if m != "harp_lib.config" and not m.startswith("harp_lib.config.")
            and m not in CONFIG_MAY_IMPORT]


def test_what_config_may_import_imports_nothing_else():
    root = Path(__file__).resolve().parents[1]
    for mod in CONFIG_MAY_IMPORT:
        path = root / (mod.replace(".", "/") + ".py")
        assert [m for m in _harp_imports(path) if m not in CONFIG_MAY_IMPORT] == [], mod


def test_config_module_imports_nothing_above_it():
    modules = sorted((Path(__file__).resolve().parents[1] / "harp_lib" / "config").glob("*.py"))
    assert {p.name for p in modules} >= {"__init__.py", "registry.py", "loading.py"}, modules
    assert {p.name: imports_above_config(p) for p in modules if imports_above_config(p)} == {}
    from harp_lib.config import BACKEND_MODULES
    assert "harp_lib.agent.backends" in BACKEND_MODULES   # declared by the package root


def test_config_import_check_can_fail(tmp_path):
    mod = tmp_path / "mod.py"
    mod.write_text("import os\nimport harp_lib\nfrom harp_lib.config.errors import ConfigError\n"
                   "from harp_lib.core.schema import Segment\nfrom harp_lib.configx import y\nfrom . import z\n")
    assert imports_above_config(mod) == ["harp_lib.core.schema", "harp_lib.configx", ".", "harp_lib"]


def test_docs_list_every_key():
    from harp_lib.config import schema_markdown
    doc = (Path(__file__).resolve().parents[1] / "docs" / "params.md").read_text()
    assert schema_markdown() in doc, "docs/params.md: paste harp_lib.config.schema_markdown() (keys changed)"


def test_repo_root_falls_back_to_this_checkout(monkeypatch, tmp_path):
    """Outside any folder with a params.yaml and without $HARP_ROOT: the checkout holding harp_lib
    (not the package folder itself: the module sits two folders below the root)."""
    from harp_lib.config import repo_root
    monkeypatch.delenv("HARP_ROOT", raising=False)
    monkeypatch.chdir(tmp_path)
    assert repo_root() == Path(__file__).resolve().parents[1] and (repo_root() / "params.yaml").is_file()
