"""The built-in reward components: recipe name -> "module:Class" (imported on first use, so
that naming a light component never imports a heavy one)."""

REWARDS: dict[str, str] = {
    "accuracy": "procrl.rewards.accuracy:AccuracyReward",
    "format": "procrl.rewards.format:FormatReward",
    "first_error": "procrl.rewards.first_error:FirstErrorReward",
    "trace": "procrl.rewards.trace:TraceReward",
    "receval_correctness": "procrl.rewards.receval:ReCEvalCorrectness",
    "receval_informativeness": "procrl.rewards.receval:ReCEvalInformativeness",
}
