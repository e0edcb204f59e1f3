"""The ``prm`` backend reads the published PRMs as their authors read them.

Each family is a tiny random-weight model built here in its architecture, loaded the way a user
loads the published checkpoint (its own code through ``trust_remote_code`` where it ships code),
and scored twice: by procrl's judge, and by the authors' published recipe written out in the test
(input format, the token positions read, the head's reading). The two must agree step by step.

* Qwen2.5-Math-PRM: ``Qwen2ForProcessRewardModel`` (a Qwen2 trunk and a two-layer, two-class
  ``score`` head), its modelling code as vLLM's and SGLang's public ports describe it (the original
  ``modeling_qwen2_rm.py`` lives on the Hugging Face Hub, which this machine cannot reach);
* Math-Shepherd: ``MistralForCausalLM`` (transformers' own code) with a SentencePiece-style
  tokenizer (metaspace, BOS), the ``ки`` tag and the ``+`` / ``-`` tokens read as
  ``tokenizer.encode("+ -")[1:]``;
* Skywork-o1-Open-PRM: ``Qwen2ForPrmModel`` (a Qwen2 trunk and a ``v_head.summary`` linear value
  head, as Skywork's public vLLM plugin defines it; its Hub modelling code could not be read here),
  with Skywork's input (BOS + question + newline, each step followed by the step token) and
  sigmoid reading.
"""

from __future__ import annotations

import json
import textwrap

import pytest
import torch

from procrl.models.loading import TOKENIZER_ASSET
from procrl.rewards.judges.prm import PRMJudge, convention_of
from procrl.rewards.judges.protocol import JudgeItem
from procrl.rewards.judges.settings import PRMSettings

ITEMS = [
    JudgeItem("Ava has 3 bags of 4 apples. How many?", ("3 x 4 = 12", "She has 12 apples.", "#### 12")),
    JudgeItem("What is 7 - 2?", ("7 - 2 = 5", "#### 5")),
    JudgeItem("Add 1 and 1.", ("1 + 1 = 3",)),
]
SMALL = dict(
    hidden_size=32,
    intermediate_size=64,
    num_hidden_layers=2,
    num_attention_heads=2,
    num_key_value_heads=1,
    initializer_range=0.5,  # random scores well away from 0.5
)

QWEN_PRM_CODE = textwrap.dedent(
    '''
    from torch import nn
    from transformers import Qwen2Model, Qwen2PreTrainedModel
    from transformers.modeling_outputs import TokenClassifierOutput


    class Qwen2ForProcessRewardModel(Qwen2PreTrainedModel):
        """Qwen2.5-Math-PRM's architecture: a Qwen2 trunk and a two-layer, two-class score head."""

        def __init__(self, config):
            super().__init__(config)
            self.num_labels = 2
            self.model = Qwen2Model(config)
            self.score = nn.Sequential(
                nn.Linear(config.hidden_size, config.hidden_size), nn.ReLU(), nn.Linear(config.hidden_size, 2)
            )
            self.post_init()

        def forward(self, input_ids=None, attention_mask=None, **kwargs):
            hidden = self.model(input_ids=input_ids, attention_mask=attention_mask).last_hidden_state
            return TokenClassifierOutput(logits=self.score(hidden))
    '''
)

SKYWORK_PRM_CODE = textwrap.dedent(
    '''
    from torch import nn
    from transformers import Qwen2Model, Qwen2PreTrainedModel


    class ValueHead(nn.Module):
        def __init__(self, config):
            super().__init__()
            self.summary = nn.Linear(config.hidden_size, 1)

        def forward(self, hidden_states):
            return self.summary(hidden_states.to(self.summary.weight.dtype))


    class Qwen2ForPrmModel(Qwen2PreTrainedModel):
        """Skywork-o1-Open-PRM's architecture: a Qwen2 trunk and a scalar value head per token."""

        def __init__(self, config):
            super().__init__(config)
            self.model = Qwen2Model(config)
            self.v_head = ValueHead(config)
            self.post_init()

        def forward(self, input_ids=None, attention_mask=None, **kwargs):
            hidden = self.model(input_ids=input_ids, attention_mask=attention_mask).last_hidden_state
            return (None, None, self.v_head(hidden).squeeze(-1))  # (lm logits, loss, value)
    '''
)


def _remote_code_model(directory, module: str, code: str, architecture: str, tokenizer, seed: int):
    """A checkpoint that ships its own modelling code (``auto_map``), as the Hub's PRMs do."""
    import importlib.util

    from transformers import Qwen2Config

    directory.mkdir(parents=True)
    (directory / f"{module}.py").write_text(code)
    spec = importlib.util.spec_from_file_location(f"_local_{module}", directory / f"{module}.py")
    loaded = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(loaded)
    torch.manual_seed(seed)
    config = Qwen2Config(vocab_size=len(tokenizer), pad_token_id=tokenizer.pad_token_id, **SMALL)
    model = getattr(loaded, architecture)(config)
    model.save_pretrained(directory)
    tokenizer.save_pretrained(directory)
    saved = json.loads((directory / "config.json").read_text())
    saved["architectures"] = [architecture]
    saved["auto_map"] = {"AutoModel": f"{module}.{architecture}"}
    (directory / "config.json").write_text(json.dumps(saved))
    return str(directory)


def _load_remote(path):
    from transformers import AutoModel

    return AutoModel.from_pretrained(path, trust_remote_code=True).eval()


def _judge(path, **extra):
    return PRMJudge(PRMSettings(model=path, trust_remote_code=True, **extra))


def _assert_matches(judge, reference):
    batched = judge.step_probabilities(ITEMS)
    single = [judge.step_probabilities([item])[0] for item in ITEMS]
    for item, got, one, expected in zip(ITEMS, batched, single, reference):
        assert len(expected) == len(item.steps)
        assert got == pytest.approx(expected, rel=1e-3, abs=1e-4)  # padded batch vs one sequence
        assert one == pytest.approx(expected, rel=1e-3, abs=1e-4)
    assert len({round(p, 6) for row in batched for p in row}) > 1  # random weights: not a constant


def test_qwen25_math_prm(tmp_path):
    from transformers import AutoTokenizer

    tokenizer = AutoTokenizer.from_pretrained(TOKENIZER_ASSET)
    tokenizer.add_special_tokens({"additional_special_tokens": ["<extra_0>"]})
    path = _remote_code_model(
        tmp_path / "qwen-prm", "modeling_qwen2_rm", QWEN_PRM_CODE, "Qwen2ForProcessRewardModel", tokenizer, seed=0
    )
    model = _load_remote(path)
    assert type(model).__name__ == "Qwen2ForProcessRewardModel"
    tokenizer = AutoTokenizer.from_pretrained(path)  # as the published recipe loads it
    # Qwen's published recipe: the chat, steps joined and ended by <extra_0>, softmax, class 1
    separator = tokenizer.encode("<extra_0>", add_special_tokens=False)[0]
    reference = []
    for item in ITEMS:
        messages = [
            {"role": "system", "content": "Please reason step by step, and put your final answer within \\boxed{}."},
            {"role": "user", "content": item.question},
            {"role": "assistant", "content": "<extra_0>".join(item.steps) + "<extra_0>"},
        ]
        text = tokenizer.apply_chat_template(messages, tokenize=False, add_generation_prompt=False)
        input_ids = tokenizer.encode(text, return_tensors="pt", add_special_tokens=False)
        with torch.no_grad():
            probabilities = torch.softmax(model(input_ids=input_ids)[0], dim=-1)
        reference.append(probabilities[0][input_ids[0] == separator][:, 1].tolist())
    judge = _judge(path)
    _assert_matches(judge, reference)
    assert judge.convention.name == "qwen2.5-math-prm"


def _sentencepiece_style_tokenizer(directory):
    """A Llama-like tokenizer (metaspace pre-tokenizer, BOS on every encode), trained here, in which
    ``▁ки``, ``▁+`` and ``▁-`` are single tokens as in Math-Shepherd's Mistral tokenizer."""
    from tokenizers import Tokenizer, decoders, models, pre_tokenizers, processors, trainers
    from transformers import PreTrainedTokenizerFast

    backend = Tokenizer(models.BPE(unk_token="<unk>"))
    backend.pre_tokenizer = pre_tokenizers.Metaspace(replacement="▁", prepend_scheme="always")
    backend.decoder = decoders.Metaspace(replacement="▁", prepend_scheme="always")
    corpus = (
        [f"Step {i}: {i} + {i} = {2 * i} ки Step {i + 1}: {i} - {i} = 0 ки answer {i} ки + -" for i in range(40)]
        + [item.question for item in ITEMS]
        + [step for item in ITEMS for step in item.steps]
    )
    trainer = trainers.BpeTrainer(vocab_size=400, special_tokens=["<unk>", "<s>", "</s>"])
    backend.train_from_iterator(corpus * 5, trainer)
    backend.post_processor = processors.TemplateProcessing(
        single="<s> $A", pair="<s> $A <s> $B", special_tokens=[("<s>", backend.token_to_id("<s>"))]
    )
    tokenizer = PreTrainedTokenizerFast(
        tokenizer_object=backend, bos_token="<s>", eos_token="</s>", unk_token="<unk>", pad_token="</s>"
    )
    tokenizer.save_pretrained(directory)
    return tokenizer


def test_math_shepherd(tmp_path):
    from transformers import MistralConfig, MistralForCausalLM

    directory = tmp_path / "math-shepherd"
    tokenizer = _sentencepiece_style_tokenizer(directory)
    good_bad = tokenizer.encode("+ -")[1:]  # Math-Shepherd's own reading of its candidate tokens
    tag = tokenizer.encode("ки")[-1]
    assert len(good_bad) == 2 and tokenizer.convert_ids_to_tokens(tag) == "▁ки"
    torch.manual_seed(1)
    config = MistralConfig(vocab_size=len(tokenizer), pad_token_id=tokenizer.pad_token_id, **SMALL)
    model = MistralForCausalLM(config).eval()
    model.save_pretrained(directory)
    reference = []
    for item in ITEMS:  # the published recipe: "{question} {step} ки\n{step} ки", softmax over + / -
        output = " ки\n".join(item.steps) + " ки"
        input_ids = torch.tensor([tokenizer.encode(f"{item.question} {output}")])
        with torch.no_grad():
            logits = model(input_ids).logits[:, :, good_bad]
        scores = logits.softmax(dim=-1)[:, :, 0]
        reference.append(scores[input_ids == tag].tolist())
    judge = _judge(str(directory))
    _assert_matches(judge, reference)
    assert judge.convention.name == "math-shepherd" and judge.step_separator == "ки"
    assert convention_of(config).name == "math-shepherd"


def test_skywork_prm(tmp_path):
    from transformers import AutoTokenizer

    tokenizer = AutoTokenizer.from_pretrained(TOKENIZER_ASSET)
    tokenizer.bos_token = "<|endoftext|>"  # Skywork's recipe starts from the tokenizer's BOS
    path = _remote_code_model(
        tmp_path / "skywork-prm", "modeling_prm", SKYWORK_PRM_CODE, "Qwen2ForPrmModel", tokenizer, 2
    )
    model = _load_remote(path)
    tokenizer = AutoTokenizer.from_pretrained(path)  # as the published recipe loads it
    # Skywork's published recipe: BOS + problem + "\n", each step's ids + the step token, sigmoid
    step_token_id = tokenizer.encode("\n")[-1]
    reference = []
    for item in ITEMS:
        ids = tokenizer.encode(tokenizer.bos_token + item.question + "\n")
        flags = [0] * len(ids)
        for step in "\n".join(item.steps).split("\n"):
            step_ids = tokenizer.encode(step) + [step_token_id]
            ids += step_ids
            flags += [0] * (len(step_ids) - 1) + [1]
        with torch.no_grad():
            value = model(input_ids=torch.tensor([ids]))[-1][0]
        reference.append([torch.sigmoid(v).item() for v, f in zip(value, flags) if f == 1])
    judge = _judge(path)
    _assert_matches(judge, reference)
    assert judge.convention.name == "skywork-prm" and judge.step_separator == "\n"


def test_a_first_error_from_each_convention(tmp_path):
    """The verdict is the first step below the threshold, whatever the convention."""
    from transformers import AutoTokenizer

    tokenizer = AutoTokenizer.from_pretrained(TOKENIZER_ASSET)
    tokenizer.bos_token = "<|endoftext|>"
    path = _remote_code_model(tmp_path / "sky", "modeling_prm", SKYWORK_PRM_CODE, "Qwen2ForPrmModel", tokenizer, 3)
    judge = _judge(path, threshold=0.5)
    probabilities = judge.step_probabilities(ITEMS)
    verdicts = judge.judge_sync(ITEMS)
    for row, verdict in zip(probabilities, verdicts):
        below = [k for k, p in enumerate(row) if p < 0.5]
        assert verdict.index == (below[0] if below else -1)
