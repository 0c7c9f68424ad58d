"""Regenerate tests/fixtures/smollm2/tokenizer_ids.json (re-runnable, deterministic): the ids Hugging Face's
`tokenizers` gives SmolLM2-135M-Instruct's tokenizer for each text of TEXTS, for tests/bpe_test.cpp.

    python3 -m venv /tmp/tok-venv && /tmp/tok-venv/bin/pip install gguf==0.17.1 tokenizers numpy
    /tmp/tok-venv/bin/python scripts/make_fixtures_tokenizer.py [path/to/SmolLM2-135M-Instruct.Q4_1.gguf]

The tokenizer is built from the GGUF's own tokens, merges and token types, configured as SmolLM2's
tokenizer.json is: a BPE model (no unknown token, no byte fallback, ignore_merges false), no normalizer,
the pre-tokenizer Sequence[Digits(individual_digits=true), ByteLevel(add_prefix_space=false,
use_regex=true)], the ByteLevel decoder, and the control tokens (ids 0..16) added as special tokens.

Each entry: "text"; "pieces" (the pre-tokenizer's pieces, mapped back from the byte alphabet to UTF-8);
"ids" (special tokens in the text parsed); "ids_plain" (with encode_special_tokens, so
"<|im_start|>" is plain text: bpe::Tokenizer::encode(text, false)); "decoded" (tokenizer.decode(ids), the
text again unless it holds a character whose byte has no token: SmolLM2's vocabulary lacks 21 bytes, and
Hugging Face's BPE drops them).

Cross-check: where transformers is installed (pip install transformers; no torch needed), its own GGUF ->
tokenizers conversion (AutoTokenizer.from_pretrained(dir, gguf_file=...)) encodes every text too; the
fixture's "cross_check" records whether it agrees. It does not decide the fixture: transformers 5.24 has no
pre-tokenizer for tokenizer.ggml.pre = "smollm" and falls back to GPT-2's (no Digits step), which gives the
same ids wherever the numbers are ASCII digits (SmolLM2 has no token of a space and a digit, or of two
digits) but not for other numbers (Arabic-Indic, full-width, Roman numerals, fractions).
"""
import json
import os
import pathlib
import sys

try:
    import gguf
    import tokenizers
    from tokenizers import AddedToken, Tokenizer, decoders, models, pre_tokenizers
except ImportError as e:
    sys.exit(f"make_fixtures_tokenizer: {e.name} is missing: pip install gguf==0.17.1 tokenizers numpy")

ROOT = pathlib.Path(__file__).resolve().parent.parent
OUT = ROOT / "tests" / "fixtures" / "smollm2" / "tokenizer_ids.json"
CACHE = pathlib.Path(os.environ.get("XDG_CACHE_HOME") or pathlib.Path.home() / ".cache")
DEFAULT_GGUF = CACHE / "headwise" / "models" / "SmolLM2-135M-Instruct" / "SmolLM2-135M-Instruct.Q4_1.gguf"

CHAT = ("<|im_start|>system\nYou are a helpful AI assistant named SmolLM, trained by Hugging Face<|im_end|>\n"
        "<|im_start|>user\nWhat is 2+2? Answer in one word.<|im_end|>\n<|im_start|>assistant\n")

TEXTS = [
    "",
    "Hello world 2024",
    "The quick brown fox jumps over the lazy dog.",
    "def add(a, b):\n    return a + b\n\n\nclass Foo:\n\tdef bar(self):\n\t\tpass\n",
    "Numbers: 12345 and 3.14 and 1,000,000 and -42 and 0x1F and 10^9.",
    "   leading spaces, trailing spaces   ",
    "a\n\nb\r\n\tc\t\t d  \n  e \n",
    " ",
    "\n",
    "x" + " " * 20 + "y" + "\n" * 7 + "z",
    "I'm sure they'll say it's fine, don't you think? We've seen it. I'd go.",
    "DON'T SHOUT, IT'S RUDE. 'tis rock'n'roll ''quoted'' 'll ?'s",
    "Café naïve résumé façade Ångström Straße",
    "e\u0301 combining acute, n\u0303",
    "Καλημέρα κόσμε, ΑΒΓ αβγ",
    "你好，世界！这是一个测试。",
    "日本語のテキストとカタカナ、한국어 텍스트",
    "Привет, мир! مرحبا بالعالم",
    "I ❤️ 🤗 and 😀👍🏽🇺🇸",
    "👨‍👩‍👧‍👦 family, 🏳️‍🌈 flag",
    "non-breaking\u00a0space, ideographic\u3000space, line\u2028separator, thin\u2009space",
    "zero\u200bwidth\ufeffbom",
    "Arabic-Indic ٣٤٥, full-width １２３, Roman Ⅻ, fractions ½ ², superscript x²",
    "∑_{i=1}^{n} x_i² ≤ ∞ → λ ∈ ℝ",
    "https://example.com/path?q=1&x=y#frag and C:\\Users\\me\\file.txt",
    "Wait!!! What??? ... --- (parens) [brackets] {braces} <angle>",
    "Supercalifragilisticexpialidocious antidisestablishmentarianism",
    '{"key": [1, 2.5, true, null], "nested": {"a": "b"}}',
    "# Title\n\n- item 1\n- item 2\n\n```python\nprint('hi')\n```\n",
    "ABC123def456ghi",
    CHAT,
    "<|endoftext|><|im_end|>text<repo_name>x<reponame>y <file_sep> <|im_start|<|im_start|><|im_start|>",
    "a\x04b!\x04!\x1d",
]


def byte_alphabet():
    """GPT-2's bytes_to_unicode as a list: byte -> its character."""
    printable = [*range(0x21, 0x7F), *range(0xA1, 0xAD), *range(0xAE, 0x100)]
    extra = iter(range(0x100, 0x200))
    return [chr(b) if b in printable else chr(next(extra)) for b in range(256)]


def gguf_vocab(path):
    reader = gguf.GGUFReader(str(path))
    field = lambda key: reader.fields[key].contents()
    pre, model = field("tokenizer.ggml.pre"), field("tokenizer.ggml.model")
    if (pre, model) != ("smollm", "gpt2"):
        sys.exit(f"make_fixtures_tokenizer: {path} has tokenizer {model}/{pre}, not gpt2/smollm")
    return field("tokenizer.ggml.tokens"), field("tokenizer.ggml.merges"), field("tokenizer.ggml.token_type")


def build(tokens, merges, types):
    vocab = {t: i for i, t in enumerate(tokens)}
    assert len(vocab) == len(tokens), "repeated tokens"
    bpe = models.BPE(vocab=vocab, merges=[tuple(m.split(" ")) for m in merges], dropout=None, unk_token=None,
                     fuse_unk=False, byte_fallback=False, ignore_merges=False)
    tok = Tokenizer(bpe)
    tok.normalizer = None
    tok.pre_tokenizer = pre_tokenizers.Sequence([
        pre_tokenizers.Digits(individual_digits=True),
        pre_tokenizers.ByteLevel(add_prefix_space=False, trim_offsets=True, use_regex=True),
    ])
    tok.decoder = decoders.ByteLevel()
    specials = [t for t, ty in zip(tokens, types) if ty in (3, 4)]
    tok.add_special_tokens([AddedToken(t, special=True, normalized=False, lstrip=False, rstrip=False,
                                       single_word=False) for t in specials])
    for t in specials:
        assert tok.token_to_id(t) == vocab[t], t
    return tok


def transformers_ids(tokens, merges, types):
    """transformers' own GGUF -> tokenizers conversion on the same metadata, or None where transformers is
    not installed. Called below AutoTokenizer.from_pretrained(gguf_file=...), whose GGUF reader imports torch."""
    try:
        from transformers.integrations.gguf.gguf_tokenizer_mapping import convert_gguf_tokenizer
    except ImportError:
        return None
    meta = {"tokenizer_type": "gpt2", "pre_tokenizer_type": "smollm", "tokens": tokens, "merges": merges,
            "token_type": types, "bos_token_id": 1, "eos_token_id": 2, "unk_token_id": 0, "pad_token_id": 2}
    backend, _ = convert_gguf_tokenizer("llama", meta)
    return [backend.encode(t, add_special_tokens=False).ids for t in TEXTS]


def main():
    path = pathlib.Path(sys.argv[1]) if len(sys.argv) > 1 else DEFAULT_GGUF
    if not path.is_file():
        sys.exit(f"make_fixtures_tokenizer: {path} is missing")
    tokens, merges, types = gguf_vocab(path)
    tok = build(tokens, merges, types)

    byte_of = {c: b for b, c in enumerate(byte_alphabet())}
    cases = []
    for text in TEXTS:
        pieces = [bytes(byte_of[c] for c in p).decode("utf-8")
                  for p, _ in tok.pre_tokenizer.pre_tokenize_str(text)]
        ids = tok.encode(text, add_special_tokens=False).ids
        tok.encode_special_tokens = True
        plain = tok.encode(text, add_special_tokens=False).ids
        tok.encode_special_tokens = False
        cases.append({"text": text, "pieces": pieces, "ids": ids, "ids_plain": plain,
                      "decoded": tok.decode(ids, skip_special_tokens=False)})

    cross = transformers_ids(tokens, merges, types)
    if cross is None:
        check = "transformers not installed: not cross-checked"
    else:
        import transformers
        differ = [c["text"] for c, ids in zip(cases, cross) if ids != c["ids"]]
        check = (f"transformers {transformers.__version__}'s GGUF conversion agrees on every text" if not differ else
                 f"transformers {transformers.__version__}'s GGUF conversion differs on {len(differ)} texts: {differ}")
    print(check)

    doc = {
        "source": f"{path.name}: {len(tokens)} tokens, {len(merges)} merges, specials ids "
                  f"{[i for i, ty in enumerate(types) if ty in (3, 4)]}",
        "made_by": f"scripts/make_fixtures_tokenizer.py with tokenizers {tokenizers.__version__}",
        "cross_check": check,
        "cases": cases,
    }
    OUT.parent.mkdir(parents=True, exist_ok=True)
    # One line per text, so that a change to the fixture reads as a change to the texts it concerns.
    head = json.dumps({k: v for k, v in doc.items() if k != "cases"}, indent=1, ensure_ascii=True)[:-2]
    cases_json = ",\n".join("  " + json.dumps(c, ensure_ascii=True) for c in cases)
    OUT.write_text(f'{head},\n "cases": [\n{cases_json}\n ]\n}}\n')
    assert json.loads(OUT.read_text()) == doc
    print(f"wrote {OUT.relative_to(ROOT)} ({len(cases)} texts)")


if __name__ == "__main__":
    main()
