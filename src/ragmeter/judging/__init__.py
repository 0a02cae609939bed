"""The judge's trust: people's labels, calibration and the corrected estimates.

Everything about whether to believe a judge, apart from the model calls themselves
(those stay in :mod:`ragmeter.judge`, the only code that talks to a model):

- :mod:`~ragmeter.judging.judge_runs` — judge a stored run or a calibration set (the
  library behind ``ragmeter judge``);
- :mod:`~ragmeter.judging.calibration`, :mod:`~ragmeter.judging.labelling` — agreement with
  people (Cohen's kappa) and the interactive labelling loop;
- :mod:`~ragmeter.judging.claim_labels`, :mod:`~ragmeter.judging.claim_label_files` —
  people's claim labels and their export/import files;
- :mod:`~ragmeter.judging.relevance_labels`, :mod:`~ragmeter.judging.relevance_labels_import`,
  :mod:`~ragmeter.judging.filling` — people's chunk-relevance labels and the rescoring
  with them;
- :mod:`~ragmeter.judging.corrected`, :mod:`~ragmeter.judging.corrected_claims`,
  :mod:`~ragmeter.judging.corrected_relevance` — judge metrics corrected with people's
  labels (prediction-powered estimates with intervals);
- :mod:`~ragmeter.judging.judge_sides` — which judge made a run's judge metrics, and the
  ones ``diff`` refuses to subtract.
"""
