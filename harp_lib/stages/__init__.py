"""One module per DVC stage: the calls its notebooks make (``notebooks/*``, run by ``dvc.yaml``).

=============  ==========================================================================
module         stage (notebooks)
=============  ==========================================================================
``benchmark``  ``benchmark`` (00_benchmark): build and summarise ``paths.benchmark``
``extract``    ``extract@<domain>`` (01_extract)
``index``      ``index@<domain>`` (02_index)
``infer``      ``infer@<domain>`` (04_answer): every setup on every query
``judge``      ``judge@<domain>`` (05_judge): judge and score
``tables``     ``tables`` (table2_main_results, table_hit_rates)
``figures``    ``figures`` (fig1_pipeline_walkthrough, fig4_human_vs_agent)
``pages``      ``pages`` (03_plan_and_retrieve, 06_your_own_audio, 07_explore)
``trace``      one query step by step, for the notebooks that show a stage at work
``common``     the config of a run, reproducible JSON and figures (every stage)
=============  ==========================================================================

The stages ``agreement``, ``ablation``, ``llm_rows`` and ``llm_table`` call
:mod:`harp_lib.stages.second_judge`, :mod:`harp_lib.evaluate.ablation` and
:mod:`harp_lib.stages.llm_rows` directly.  A stage's code dependencies in ``dvc.yaml`` are the
files its notebook imports, transitively (``scripts/dvc_deps.py`` writes them), so a change to
one of these modules re-runs its own stage only.  This package imports none of its modules:
importing ``harp_lib.stages.index`` loads no other stage.  :mod:`harp_lib.app.pipeline` re-exports
every function under its old name.
"""
