"""The body of scripts/make-fixtures-bert (run inside its venv): writes tests/fixtures/bert/.

tests/fixtures/bert/tokenizer.json
    {"cases": [{"text", "tokens", "ids"}]}: BertTokenizer's answer for strings that exercise
    every rule of the basic tokenizer and of WordPiece (no model weights needed to compare).

tests/fixtures/bert/special_casing.json
    {"cases": [{"text", "words", "tokens", "ids"}]}: the same for letters whose lower case is not
    one letter for one letter in Unicode's full mapping (final sigma, dotted I, sharp s, title-case
    digraphs, ligatures, compatibility signs), with the words BertTokenizer's basic step gave
    before WordPiece (what WordPiece::basic_tokenize must give: no vocabulary needed).
    `make_fixtures_bert.py --tokenizer-only` rewrites the two tokenizer fixtures and nothing else.

tests/fixtures/bert/<case>/   one directory per forward-pass case (manifest.json lists them):
    attention.npy  (L * B, H, N, N)    layer-major: row l * B + b is layer l of sentence b
    hidden.npy     ((L + 1) * B, N, 384) row l * B + b: the embeddings (l = 0), then each layer
    embedding.npy  (B, 384)             mean over real tokens, L2-normalised
    The ids, tokens and attention mask of the (padded) batch are in manifest.json.

tests/fixtures/bert/layer_d32_h4/  one small BertLayer (d_model 32, 4 heads, FFN 64) with random
    parameters, its padded input and its output: what exercise 07's grader compares with.

The forward passes run in float64 (the model's float32 weights widened), stored as float32.
"""
import json
import os
import pathlib
import sys

import numpy as np
import torch
from transformers import BertConfig, BertModel, BertTokenizer
from transformers.models.bert.modeling_bert import BertLayer

ROOT = pathlib.Path(__file__).resolve().parent.parent
OUT = ROOT / "tests" / "fixtures" / "bert"
MODEL = os.environ.get("HEADWISE_MODEL_DIR") or os.path.join(
    os.environ.get("XDG_CACHE_HOME") or os.path.expanduser("~/.cache"), "headwise", "models", "all-MiniLM-L6-v2")

TOKENIZER_CASES = [
    "The dog could not jump the fence because it was too tired.",
    "Café crème brûlée in São Paulo, naïve Zoë!",
    "ÉCOLE NORMALE SUPÉRIEURE",
    "In 2024, 3.14159 is roughly π and 1,000,000 is a million.",
    "Tokenization of unbelievably hyperparameterized words.",
    "I love my dog 🙂 and 東京 ☃.",
    "Hello, world! (Yes—really?) #tags & @mentions...",
    "  tabs\tand\nnewlines\r\n and   spaces  ",
    "control\u0000char\u0007s and zero\u200bwidth",
    "x" * 101 + " short",
    "supercalifragilisticexpialidocious",
    "日本語のテキストと한국어",
    "Ångström, Øresund, straße, œuvre",
    "e-mail: someone@example.com, URL https://example.org/a_b?c=d",
    "[CLS] is not special inside text",
    "$100 + 50% = ¿qué?",
]

# BertTokenizer lower-cases the text one character at a time before its basic tokenizer runs
# (PreTrainedTokenizer.tokenize with do_lower_case), so a capital sigma is always "σ", never the
# final "ς" that str.lower() gives a whole word; these cases pin what it really does.
SPECIAL_CASING_CASES = [
    "ΟΔΟΣ",
    "Σ",
    "ΣΣ ΟΔΟΣ. Α:Σ ΑΣʼ",
    "ΌΣΟΣ ΣΑΣ Ὀδυσσεύς",
    "İstanbul İ I ı",
    "STRASSE Straße ẞ",
    "ǅ ǈ ᾼ ᾈ",
    "Ω K Å",
    "ﬁ ﬀ ΐ ǰ ŉ",
    "Ⅻ Ⓐ",
]

FORWARD_CASES = [
    ("tired", ["The dog could not jump the fence because it was too tired."]),
    ("tall", ["The dog could not jump the fence because it was too tall."]),
    ("accents", ["Café crème brûlée in São Paulo, naïve Zoë!"]),
    ("numbers", ["In 2024, 3.14159 is roughly π and 1,000,000 is a million."]),
    ("pieces", ["Tokenization of unbelievably hyperparameterized words."]),
    ("unknown", ["I love my dog 🙂 and 東京 ☃."]),
    ("punctuation", ["Hello, world! (Yes—really?) #tags & @mentions..."]),
    ("padded_batch", ["A man is playing a guitar.", "Someone is playing an instrument.",
                      "The stock market fell sharply today."]),
    ("padded_pair", ["Hello!", "Tokenization of unbelievably hyperparameterized words."]),
]


def save(path, array):
    path.parent.mkdir(parents=True, exist_ok=True)
    np.save(path, np.ascontiguousarray(array, dtype=np.float32))


def tokenizer_fixture(tok):
    cases = []
    for text in TOKENIZER_CASES:
        ids = tok(text)["input_ids"]
        cases.append({"text": text, "tokens": tok.convert_ids_to_tokens(ids), "ids": ids})
    (OUT / "tokenizer.json").write_text(json.dumps({"cases": cases}, ensure_ascii=False, indent=1) + "\n",
                                        encoding="utf-8")


def special_casing_fixture(tok):
    words = []
    basic = tok.basic_tokenizer.tokenize
    tok.basic_tokenizer.tokenize = lambda text, *args, **kwargs: words.append(basic(text, *args, **kwargs)) or words[-1]
    cases = []
    for text in SPECIAL_CASING_CASES:
        words.clear()
        ids = tok(text)["input_ids"]
        assert len(words) == 1, "one run of the basic tokenizer per case"
        cases.append({"text": text, "words": words[0], "tokens": tok.convert_ids_to_tokens(ids), "ids": ids})
    tok.basic_tokenizer.tokenize = basic
    (OUT / "special_casing.json").write_text(json.dumps({"cases": cases}, ensure_ascii=False, indent=1) + "\n",
                                             encoding="utf-8")


def forward_fixtures(tok, model):
    manifest = []
    for name, sentences in FORWARD_CASES:
        batch = tok(sentences, padding=True, return_tensors="pt")
        with torch.no_grad():
            out = model(**batch, output_attentions=True, output_hidden_states=True)
        mask = batch["attention_mask"].to(torch.float64)
        last = out.last_hidden_state
        pooled = (last * mask[:, :, None]).sum(1) / mask.sum(1, keepdim=True)
        embedding = torch.nn.functional.normalize(pooled, p=2, dim=1)
        B, N = batch["input_ids"].shape
        attention = torch.stack(out.attentions).reshape(-1, *out.attentions[0].shape[1:])  # (L*B, H, N, N)
        hidden = torch.stack(out.hidden_states).reshape(-1, N, last.shape[-1])             # ((L+1)*B, N, d)
        save(OUT / name / "attention.npy", attention.numpy())
        save(OUT / name / "hidden.npy", hidden.numpy())
        save(OUT / name / "embedding.npy", embedding.numpy())
        manifest.append({"name": name, "sentences": sentences, "batch": B, "seq": N,
                         "ids": batch["input_ids"].tolist(),
                         "tokens": [tok.convert_ids_to_tokens(row) for row in batch["input_ids"].tolist()],
                         "attention_mask": batch["attention_mask"].tolist()})
    (OUT / "manifest.json").write_text(json.dumps({"layers": model.config.num_hidden_layers,
                                                   "heads": model.config.num_attention_heads,
                                                   "cases": manifest}, ensure_ascii=False, indent=1) + "\n",
                                       encoding="utf-8")


def layer_fixture():
    """A small BertLayer with lively random parameters (the default init makes LayerNorm the identity
    and the weights tiny, which would let a wrong LayerNorm or GELU slip through)."""
    torch.manual_seed(7)
    d, heads, ffn, B, N = 32, 4, 64, 2, 6
    config = BertConfig(hidden_size=d, num_attention_heads=heads, intermediate_size=ffn, layer_norm_eps=1e-12,
                        hidden_act="gelu", attn_implementation="eager")
    layer = BertLayer(config).double().eval()
    with torch.no_grad():
        for pname, p in layer.named_parameters():
            if "LayerNorm.weight" in pname:
                p.copy_(1.0 + 0.3 * torch.randn_like(p))
            elif "LayerNorm.bias" in pname or pname.endswith(".bias"):
                p.copy_(0.3 * torch.randn_like(p))
            else:  # (out, in): std 1.5 / sqrt(in), sharp enough attention and a busy GELU
                p.copy_(1.5 * torch.randn_like(p) / p.shape[1] ** 0.5)
    x = torch.randn(B, N, d, dtype=torch.float64)
    x = x.to(torch.float32).to(torch.float64)  # the values stored in x.npy, exactly
    padding = torch.zeros(B, N, dtype=torch.bool)
    padding[1, N - 2:] = True  # sentence 1 ends in two [PAD] keys
    extended = torch.zeros(B, 1, 1, N, dtype=torch.float64).masked_fill(padding[:, None, None, :],
                                                                         torch.finfo(torch.float64).min)
    params = {n: p.detach().to(torch.float32).to(torch.float64) for n, p in layer.named_parameters()}
    with torch.no_grad():
        for n, p in layer.named_parameters():
            p.copy_(params[n])  # the float32 values that are stored, exactly
        y, weights = layer(x, attention_mask=extended, output_attentions=True)
    folder = OUT / "layer_d32_h4"
    short = {
        "attention.self.query.weight": "w_q", "attention.self.query.bias": "b_q",
        "attention.self.key.weight": "w_k", "attention.self.key.bias": "b_k",
        "attention.self.value.weight": "w_v", "attention.self.value.bias": "b_v",
        "attention.output.dense.weight": "w_o", "attention.output.dense.bias": "b_o",
        "attention.output.LayerNorm.weight": "ln1_gamma", "attention.output.LayerNorm.bias": "ln1_beta",
        "intermediate.dense.weight": "w_1", "intermediate.dense.bias": "b_1",
        "output.dense.weight": "w_2", "output.dense.bias": "b_2",
        "output.LayerNorm.weight": "ln2_gamma", "output.LayerNorm.bias": "ln2_beta",
    }
    for n, p in params.items():
        save(folder / f"{short[n]}.npy", p.numpy())
    save(folder / "x.npy", x.numpy())
    np.save(folder / "key_padding_mask.npy", padding.numpy())
    save(folder / "output.npy", y.numpy())
    save(folder / "weights.npy", weights.numpy())


def main():
    tok = BertTokenizer(os.path.join(MODEL, "vocab.txt"), do_lower_case=True, clean_up_tokenization_spaces=False)
    OUT.mkdir(parents=True, exist_ok=True)
    tokenizer_fixture(tok)
    special_casing_fixture(tok)
    if sys.argv[1:] == ["--tokenizer-only"]:
        print(f"make-fixtures-bert: wrote {OUT.relative_to(ROOT)}/tokenizer.json and special_casing.json")
        return
    model = BertModel.from_pretrained(MODEL, attn_implementation="eager", add_pooling_layer=False).double().eval()
    forward_fixtures(tok, model)
    layer_fixture()
    total = sum(f.stat().st_size for f in OUT.rglob("*") if f.is_file())
    print(f"make-fixtures-bert: wrote {OUT.relative_to(ROOT)} ({total / 1e6:.1f} MB)")


if __name__ == "__main__":
    main()
