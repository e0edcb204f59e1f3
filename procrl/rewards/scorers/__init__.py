"""The models behind the components, as scorers: text in, numbers out, loaded lazily.

* :mod:`~procrl.rewards.scorers.taggers`: TRACE's sentence taggers (the embedded cue tagger,
  published-format checkpoints, HF multi-label classifiers) and the 8 labels;
* :mod:`~procrl.rewards.scorers.nli`: the NLI scorer of ReCEval correctness;
* :mod:`~procrl.rewards.scorers.info_gain`: the target log-probabilities of ReCEval
  informativeness (a causal LM, or the trainer's reference model).

Components import them; they import no component.
"""
