// Package checkpoint reads Hugging Face checkpoint folders of the GPT-2 and Llama families: the
// configuration, the weight files (one model.safetensors, or shards listed by
// model.safetensors.index.json) and the weights under their canonical names, checked against the
// configuration. It knows nothing of models' graphs: a model builder asks it for named, shaped
// arrays.
//
//	cfg, err := checkpoint.ReadConfig(dir)   // config.json, normalized and checked
//	ck, err := checkpoint.Open(dir)          // weight files mapped, headers validated
//	defer ck.Close()
//	ws, err := ck.Tensors(cfg)               // names and shapes checked against cfg
//	a, err := ws.Get("model.norm.weight").Array("f32") // converted on request
//
// The configuration: model_type gpt2, or llama and the families that share its layout where the
// fields agree (mistral, qwen2), become one Config. Every size is range-checked and every
// unsupported feature is refused by name (rope_scaling "yarn", activation_function "relu",
// mlp_bias true), because a model read without it would compute something else silently. A
// sliding window shorter than max_position_embeddings bounds the context instead: within the
// window, sliding-window attention is full causal attention.
//
// The weights: each file is mapped read-only (read at offsets where the system has no mmap) and
// its header validated by tensorio before anything else; a tensor's bytes are converted (f32, f16
// or bf16 in; f32 by default, or f16/bf16 when asked, out) only when Array asks for them, so a
// checkpoint is never held twice. Names are brought to one form: GPT-2's with the "transformer."
// prefix whether or not the file has it, its attention mask buffers skipped, Conv1D weights kept
// in their stored [in, out] layout; a tied lm_head.weight is dropped.
//
// Names read from the index are untrusted: each shard resolves inside the folder, symbolic links
// included, except that a folder of Hugging Face's hub cache (REPO/snapshots/REV) may link into
// REPO's blobs. Errors are one line naming the file and the field or tensor:
//
//	checkpoint: gpt2/config.json: n_head 5 does not divide n_embd 768
package checkpoint
