"""A stand-in for the two transformers classes llama.cpp's converter uses, for a machine without
transformers (to_gguf.py --standin): AutoConfig, config.json with the defaults a Gemma 4 text
config has for the keys a synthetic config leaves out and the converter reads, and AutoTokenizer,
read from tokenizer.json's vocabulary and added tokens."""
import json
from pathlib import Path


# Gemma4TextConfig's defaults for keys a config without experts may leave out.
TEXT_DEFAULTS = {"moe_intermediate_size": None, "num_experts": None, "top_k_experts": None,
                 "enable_moe_block": False, "attention_k_eq_v": False, "attention_bias": False}


class _Config:
    def __init__(self, config):
        self._config = config

    def to_dict(self):
        return self._config


class AutoConfig:
    @staticmethod
    def from_pretrained(path, **kwargs):
        config = json.loads((Path(path) / "config.json").read_text(encoding="utf-8"))
        text = config.get("text_config", config)
        for key, value in TEXT_DEFAULTS.items():
            text.setdefault(key, value)
        return _Config(config)


class _Tokenizer:
    is_fast = True

    def __init__(self, path):
        t = json.loads((Path(path) / "tokenizer.json").read_text(encoding="utf-8"))
        self._base = dict(t["model"]["vocab"])
        self._added = {a["content"]: a["id"] for a in t.get("added_tokens", [])}
        self._special = {a["content"]: a["id"] for a in t.get("added_tokens", []) if a.get("special")}
        self.vocab_size = len(self._base)

    def get_vocab(self):
        return {**self._base, **self._added}

    def get_added_vocab(self):
        return dict(self._added)

    @property
    def all_special_tokens(self):
        return list(self._special)

    @property
    def all_special_ids(self):
        return list(self._special.values())


class AutoTokenizer:
    @staticmethod
    def from_pretrained(path, **kwargs):
        return _Tokenizer(path)
