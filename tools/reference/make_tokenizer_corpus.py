#!/usr/bin/env python3
"""Writes testdata/tokenizer/corpus.json: texts that exercise every corner of the tokenizer
(scripts and languages, code, whitespace runs, CRLF, emoji with joiners, combining marks,
private-use and control characters, special tokens written inside text, very long words), plus
seeded random mixtures of those character classes. Pure Python, no dependencies."""
import json
import random
import sys

FIXED = [
    "", " ", "  ", "Hello world", "Hello  world", " leading and trailing ", "hello\nworld\n",
    "The quick brown fox jumps over the lazy dog. 1234567890 3.14159 1,000,000 -42 +7e-3",
    "Der Straßenbahnfahrer fährt über die Brücke. Ça va? ¿Qué tal? Ølstue på Åland.",
    "Привет, мир! Как дела? Съешь же ещё этих мягких французских булок.",
    "Γειά σου Κόσμε. Ἐν ἀρχῇ ἦν ὁ λόγος.", "İstanbul'da ılık bir gün. ĞÜŞİÖÇ",
    "你好，世界！今天天气很好。我们一起去公园散步吧。", "日本語のテキスト：ひらがな、カタカナ、漢字。ｶﾀｶﾅ半角。",
    "안녕하세요 세계! 한국어 텍스트입니다.", "مرحبا بالعالم! هذا نص عربي.", "שלום עולם! זה טקסט בעברית.",
    "नमस्ते दुनिया! यह हिंदी पाठ है।", "สวัสดีชาวโลก ภาษาไทยไม่มีช่องว่างระหว่างคำ",
    "Xin chào thế giới! Tiếng Việt có nhiều dấu.", "ሰላም ዓለም", "გამარჯობა მსოფლიო", "Բարեւ աշխարհ",
    "def f(x):\n    return x * 2\n\nclass A:\n\tpass\n",
    "#include <stdio.h>\nint main(void) {\n  printf(\"%d\\n\", 42);\n  return 0;\n}\n",
    "{\"key\": [1, 2, {\"nested\": null}], \"s\": \"a\\u00e9\"}",
    "<html><body><div class=\"x\">Text &amp; more</div></body></html>",
    "SELECT * FROM users WHERE id = 1; -- comment", "x = a->b ? c : d; y <<= 2; z != w && q || r",
    "a     b", "\t\t\tindented", "\n\n\n\n", "   \n   \n", "trailing spaces    ", "\u3000full width space",
    "line one\r\nline two\r\n\r\nline four", "\r", "mixed\r\n\n\r\tend",
    "👨‍👩‍👧‍👦 family", "🇫🇷🇯🇵🇺🇸 flags", "👍🏽 👍🏿 skin tones", "1️⃣ keycap", "🏳️‍🌈 rainbow flag",
    "😀😃😄😁😆😅😂🤣", "❤️ ✨ 🚀 🧑‍💻", "e\u0301 a\u0300 o\u0302 n\u0303", "Z\u0351\u0364\u036b\u0300a\u0336lgo",
    "\u0915\u094d\u0937", "\ue000\uf8ff private use", "\U000f0000\U0010fffd plane 15/16",
    "\x00\x01\x07\x1b[31mred\x1b[0m", "zero\u200bwidth\u200cnon\u200djoiner", "\ufeffBOM", "\u202eRTL override",
    "\x7f\x80\x9f C1", "<start_of_turn>user\nhi<end_of_turn>\n<start_of_turn>model\n",
    "<bos>text<eos>", "text <unused5> more", "<start_of_tur", "<<bos>>", "<bos><bos>", "a<pad>b",
    "<start_of_image> image", "<mask>", "[multimodal]", "<0x41>", "<unk>",
    "a" * 3000, "supercalifragilisticexpialidocious" * 60, "1234567890" * 200,
    "https://example.com/a/very/long/path?with=query&and=more#fragment" * 20,
    "Pneumonoultramicroscopicsilicovolcanoconiosis", "𝔘𝔫𝔦𝔠𝔬𝔡𝔢 𝕳𝖊𝖑𝖑𝖔", "𐎀𐎁𐎂 ugaritic", "𠀀𠀁𠀂 CJK ext B",
    "\u00ff\u0100\u017f", "ǅ ǈ ǋ titlecase", "ﬁ ﬂ ligatures", "½ ¼ ¾ ² ³", "™ © ®",
]

CLASSES = [
    "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ", "0123456789", " " * 8 + "\t\n\r",
    ".,;:!?'\"()[]{}<>/\\|@#$%^&*-_=+~`", "äöüßéèêñçøåæœ", "абвгдежзийклмнопрст", "αβγδεζηθ",
    "的一是不了人我在有他这中大来上个国", "あいうえおかきくけこアイウエオ", "가나다라마바사", "ابتثجحخ", "אבגדהוז",
    "अआइईउऊकखग", "กขคงจฉ", "😀🚀❤✨🧑\u200d💻🏽", "\u0301\u0300\u0308", "\ue000\ue001\U000f0001",
    "\x00\x01\x1b\x7f", "\u200b\u200d\ufeff",
]
SPECIALS = ["<bos>", "<eos>", "<start_of_turn>", "<end_of_turn>", "<unused3>", "<pad>"]


def random_texts(seed, count):
    rng = random.Random(seed)
    out = []
    for _ in range(count):
        parts = []
        for _ in range(rng.randint(1, 40)):
            if rng.random() < 0.05:
                parts.append(rng.choice(SPECIALS))
            else:
                cls = rng.choice(CLASSES)
                parts.append("".join(rng.choice(cls) for _ in range(rng.randint(1, 12))))
        out.append("".join(parts))
    return out


def main():
    out = sys.argv[1] if len(sys.argv) > 1 else "testdata/tokenizer/corpus.json"
    texts = FIXED + random_texts(20261129, 120)
    with open(out, "w", encoding="utf-8") as f:
        json.dump(texts, f, ensure_ascii=True, indent=0)
    print(f"{len(texts)} texts -> {out}")


if __name__ == "__main__":
    main()
