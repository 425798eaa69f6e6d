"""embedkit.representations.encoders: Hugging Face encoders loaded once per process and settings,
and the special tokens a tokenizer puts around a text."""

from __future__ import annotations

from pathlib import Path

import torch

from embedkit.representations.encoders import load_encoder, special_tokens
from embedkit.storage.resources import resource_path


def test_an_encoder_is_loaded_once_per_settings_and_shared():
    tokenizer, network, source = load_encoder("all-minilm-l6-v2", False, "cpu", "float32")
    again = load_encoder("all-minilm-l6-v2", False, "cpu", "float32")
    assert again[0] is tokenizer and again[1] is network  # one copy for every embedder
    assert Path(source) == resource_path("all-minilm-l6-v2")
    assert network.config.hidden_size == 384
    assert {p.dtype for p in network.parameters()} == {torch.float32}
    half = load_encoder("all-minilm-l6-v2", False, "cpu", "bfloat16")[1]
    assert half is not network and {p.dtype for p in half.parameters()} == {torch.bfloat16}
    assert {p.dtype for p in network.parameters()} == {torch.float32}  # the shared one untouched


def _word_level(template: str | None, specials=()):
    """A fast tokenizer of two words whose post-processor puts ``template`` around a text."""
    from tokenizers import Tokenizer, models, pre_tokenizers, processors
    from transformers import PreTrainedTokenizerFast

    vocab = {"[UNK]": 0, "hello": 1, **{name: i for name, i in specials}}
    inner = Tokenizer(models.WordLevel(vocab, unk_token="[UNK]"))
    inner.pre_tokenizer = pre_tokenizers.Whitespace()
    if template is not None:
        inner.post_processor = processors.TemplateProcessing(single=template,
                                                             special_tokens=list(specials))
    return PreTrainedTokenizerFast(tokenizer_object=inner, unk_token="[UNK]")


def test_special_tokens_are_those_before_and_after_the_text():
    tokenizer = load_encoder("all-minilm-l6-v2", False, "cpu", "float32")[0]
    assert special_tokens(tokenizer) == ([101], [102])  # [CLS] text [SEP]
    assert special_tokens(_word_level(None)) == ([], [])
    assert special_tokens(_word_level("$A [END]", [("[END]", 7)])) == ([], [7])
    assert special_tokens(_word_level("[A] [B] $A [C]", [("[A]", 4), ("[B]", 5), ("[C]", 6)])) == \
        ([4, 5], [6])
