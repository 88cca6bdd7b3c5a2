#!/usr/bin/python3
"""sentencepiece-reference.py: SentencePiece test models and their ids for package tokenizer.

Trains two small models with Debian's python3-sentencepiece (0.1.97) on the GPL-3 text every
Debian system ships (/usr/share/common-licenses/GPL-3) plus a few lines of accented text:

  tokenizer/testdata/spm/bpe/tokenizer.model      BPE with byte fallback, identity normalization,
                                                  dummy prefix, spaces kept (as Llama 2's)
  tokenizer/testdata/spm/unigram/tokenizer.model  unigram with byte fallback, extra whitespace
                                                  removed (SentencePiece's default)

and writes tokenizer/testdata/sp_ids.json: for each model, the ids SentencePiece itself gives
each text of tokenizer/testdata/texts.json (sp.encode: no BOS, no EOS). Training is
single-threaded and seeded, so the files are reproducible; run from the repository root.
"""
import io
import json
import os

import sentencepiece as spm

ROOT = os.path.join("tokenizer", "testdata")
EXTRA = """Café naïve résumé façade. Übermäßig große Straße.
Les élèves étudient à l'école; ça va très bien.
Numbers like 2024, 3.14 and 1,000,000 appear in text.
"""


def corpus():
    with open("/usr/share/common-licenses/GPL-3", encoding="utf-8") as f:
        text = f.read()
    return [l for l in (text + EXTRA).splitlines() if l.strip()]


def train(name, **options):
    out = os.path.join(ROOT, "spm", name)
    os.makedirs(out, exist_ok=True)
    model = io.BytesIO()
    spm.SentencePieceTrainer.train(
        sentence_iterator=iter(corpus()),
        model_writer=model,
        num_threads=1,
        normalization_rule_name="identity",
        character_coverage=1.0,
        byte_fallback=True,
        minloglevel=2,
        **options,
    )
    data = model.getvalue()
    with open(os.path.join(out, "tokenizer.model"), "wb") as f:
        f.write(data)
    return spm.SentencePieceProcessor(model_proto=data)


def main():
    with open(os.path.join(ROOT, "texts.json"), encoding="utf-8") as f:
        texts = json.load(f)
    models = {
        "bpe": train("bpe", model_type="bpe", vocab_size=700, add_dummy_prefix=True,
                     remove_extra_whitespaces=False, split_digits=True, allow_whitespace_only_pieces=True),
        "unigram": train("unigram", model_type="unigram", vocab_size=700),
    }
    ids = {name: [sp.encode(t) for t in texts] for name, sp in models.items()}
    decoded = {name: [sp.decode(i) for i in ids[name]] for name, sp in models.items()}
    with open(os.path.join(ROOT, "sp_ids.json"), "w", encoding="utf-8") as f:
        json.dump({"ids": ids, "decoded": decoded}, f, ensure_ascii=False)
        f.write("\n")


if __name__ == "__main__":
    main()
