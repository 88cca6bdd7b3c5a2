// Package tokenizer turns text into the token ids of a Hugging Face language model and back:
// GPT-2's byte-level BPE, Llama 3's and Qwen2's byte-level BPE, Llama 2's, Mistral's and
// TinyLlama's SentencePiece BPE with byte fallback, and SentencePiece's own tokenizer.model (BPE
// or unigram). Of gcomp it uses only tensorio's safe file reading: a folder in, ids out.
//
// # Loading
//
// Load reads a model folder and takes the first of
//
//  1. tokenizer.json, Hugging Face's format: a BPE model with either a ByteLevel pre-tokenizer
//     (GPT-2, Llama 3, Qwen2; the word pattern is GPT-2's, Llama 3's or Qwen2's) or the
//     SentencePiece form (spaces as "▁", a dummy-prefix "▁", <0xXX> byte fallback pieces), as
//     Prepend/Replace normalizers (Llama 2) or a Metaspace pre-tokenizer (Mistral);
//  2. vocab.json with merges.txt, GPT-2's original files;
//  3. tokenizer.model, a SentencePiece model with the identity normalizer.
//
// Special tokens come from tokenizer.json's added_tokens and post-processor template (which says
// whether BOS is added), then tokenizer_config.json (bos_token, eos_token, unk_token, pad_token,
// add_bos_token, add_eos_token, added_tokens_decoder) and generation_config.json's eos_token_id,
// which may list several ids (Llama 3: end of text, end of message, end of turn). Anything else —
// a WordPiece or Unigram tokenizer.json, a normalizer or split pattern this package does not
// implement (an added token's lstrip, rstrip or single_word among them), malformed JSON, an id
// out of range — is one error naming the file and the field (or line:column), and no tokenizer.
//
// # Encoding and decoding
//
//	tok, err := tokenizer.Load("llama-3-8b")
//	ids, err := tok.Encode("Hello world")     // [128000 9906 1917]: BOS, "Hello", " world"
//	text, err := tok.Decode(ids)              // "Hello world": special tokens are left out
//	plain, err := tok.EncodeWith("<|eot_id|>", tokenizer.EncodeOptions{}) // the text, not the token
//
// Encode reads added tokens written in the text as their ids and adds BOS (and EOS) as the
// configuration says; EncodeWith chooses either. The ids equal the reference encoders' on the
// committed texts of testdata/texts.json (scripts/tokenizer-data.mjs for the npm packages'
// encoders, scripts/sentencepiece-reference.py for SentencePiece's).
//
// # Streaming
//
// A byte-level or byte-fallback token can hold part of a UTF-8 character ("😀" is four byte
// tokens in Llama 2). A StreamDecoder returns the text each new id completes, holding back a
// character's first bytes until its last arrives, so every chunk is valid UTF-8 and the chunks
// add up to Decode of all the ids:
//
//	d := tok.NewStreamDecoder()
//	for _, id := range generated {
//		s, err := d.Next(id)
//		...
//		fmt.Print(s)
//	}
//	fmt.Print(d.Flush())
//
// The word patterns are scanners written out by hand (Go's regexp has no lookahead), checked
// against the patterns as JavaScript runs them; BPE merges by rank or score with a heap, so a
// long word costs O(n log n). A Tokenizer is immutable after Load (its word cache is locked) and
// safe for concurrent use.
package tokenizer
