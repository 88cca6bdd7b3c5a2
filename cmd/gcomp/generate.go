package main

import (
	"bufio"
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"math"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/gcomp/gcomp/checkpoint"
	"github.com/gcomp/gcomp/ir"
	"github.com/gcomp/gcomp/lm"
	"github.com/gcomp/gcomp/passes"
	"github.com/gcomp/gcomp/tensor"
	"github.com/gcomp/gcomp/tensorio"
	"github.com/gcomp/gcomp/tokenizer"
)

// generateFlags are gcomp generate's flags.
type generateFlags struct {
	prompt, promptIDs                *string
	maxNew, topK, maxSeq             *int
	temperature, topP, repetition    *float64
	seed                             *uint64
	device, dtype, idsOut, logitsOut *string
	stats, noSimChecks               *bool
	target                           targetFlags
	textPrompt                       bool // --prompt was given, perhaps as ""
}

func cmdGenerate(args []string, stdout, stderr io.Writer) error {
	fs := flag.NewFlagSet("generate", flag.ContinueOnError)
	f := generateFlags{
		prompt:      fs.String("prompt", "", "the prompt's text (encoded with the folder's tokenizer)"),
		promptIDs:   fs.String("prompt-ids", "", "the prompt as token ids, comma-separated (1,2,3)"),
		maxNew:      fs.Int("max-new-tokens", 64, "generate at most this many tokens (0: up to the context's end)"),
		temperature: fs.Float64("temperature", 0.8, "sampling temperature; 0 is greedy decoding"),
		topK:        fs.Int("top-k", 200, "sample from the K most likely tokens (0: all)"),
		topP:        fs.Float64("top-p", 1, "sample from the most likely tokens holding this much probability (1: all)"),
		repetition:  fs.Float64("repetition-penalty", 1, "divide the logits of tokens already in the sequence (CTRL's penalty; 1: none)"),
		seed:        fs.Uint64("seed", 0, "the seed of the draws: the same seed gives the same text"),
		maxSeq:      fs.Int("max-seq", 0, "the KV cache's length in tokens (default: the model's context)"),
		device:      fs.String("device", "auto", "where to run: auto (a GPU, else the simulator), cuda:N, sim or ref"),
		dtype:       fs.String("dtype", "f32", "compute dtype: f32, or bf16 or f16 (matmuls in that dtype with f32 accumulation, as --amp)"),
		idsOut:      fs.String("ids-out", "", `write {"prompt_ids": [...], "generated_ids": [...]} to this JSON file`),
		logitsOut:   fs.String("logits-out", "", "write the logits that chose each generated token as f32 [generated, vocab] to this .npy file"),
		stats:       fs.Bool("stats", false, "print the prefill and decode times, tokens/s and the modeled decode time per token on stderr"),
		noSimChecks: fs.Bool("no-sim-checks", false, "run the simulator without its memory, race and barrier checks (faster)"),
		target:      addTargetFlags(fs),
	}
	dir, err := parseModelArgs(fs, args, stdout, "MODEL_DIR (--prompt TEXT | --prompt-ids 1,2,3) [--max-new-tokens N] [--temperature T] [--top-k K] [--top-p P] [--repetition-penalty R] [--seed S] [--device auto|cuda:N|sim|ref] [--dtype f32|bf16|f16] [--max-seq N] [--ids-out FILE.json] [--logits-out FILE.npy] [--stats]")
	if err != nil {
		return err
	}
	if given(fs, "prompt") == given(fs, "prompt-ids") {
		return fmt.Errorf("gcomp generate: give the prompt as --prompt TEXT or --prompt-ids 1,2,3 (one of them)")
	}
	f.textPrompt = given(fs, "prompt")
	return generate(dir, f, stdout, stderr)
}

func generate(dir string, f generateFlags, stdout, stderr io.Writer) error {
	fail := func(format string, args ...any) error { return fmt.Errorf("gcomp generate: "+format, args...) }
	for _, out := range []string{*f.idsOut, *f.logitsOut} {
		if out != "" {
			if err := checkOutput(out); err != nil {
				return err
			}
		}
	}
	copt, err := f.target.options()
	if err != nil {
		return fail("%v", err)
	}
	switch *f.dtype {
	case "f32":
	case "bf16", "f16":
		if *f.target.amp != "" && *f.target.amp != *f.dtype {
			return fail("--dtype %s and --amp %s disagree", *f.dtype, *f.target.amp)
		}
		copt.AMP, _ = ir.ParseDType(*f.dtype)
	default:
		return fail("--dtype %q: want f32, bf16 or f16", *f.dtype)
	}
	sampling := lm.Sampling{Temperature: *f.temperature, TopK: *f.topK, TopP: *f.topP, RepetitionPenalty: *f.repetition, Seed: *f.seed}
	if err := sampling.Check(); err != nil {
		return fail("%v", err)
	}
	if *f.maxNew < 0 {
		return fail("--max-new-tokens %d: want ≥ 0", *f.maxNew)
	}
	if *f.maxSeq < 0 {
		return fail("--max-seq %d: want ≥ 0", *f.maxSeq)
	}
	start := time.Now()
	folder, err := lm.LoadFolder(dir, *f.maxSeq)
	if err != nil {
		return fail("%v", err)
	}
	tok := folder.Tokenizer
	var prompt []int
	if f.textPrompt {
		if tok == nil {
			return fail("%s has no tokenizer (tokenizer.json, vocab.json with merges.txt, or tokenizer.model): give --prompt-ids", dir)
		}
		if prompt, err = tok.Encode(*f.prompt); err != nil {
			return fail("%v", err)
		}
		if len(prompt) == 0 {
			return fail("the prompt %q encodes to no tokens (this tokenizer adds no BOS): give text, or the BOS id with --prompt-ids", *f.prompt)
		}
	} else if prompt, err = parseIDs(*f.promptIDs); err != nil {
		return fail("--prompt-ids: %v", err)
	} else if len(prompt) == 0 {
		return fail("--prompt-ids is empty: give at least one token id")
	}
	if len(prompt) >= folder.Model.MaxSeq() {
		return fail("the prompt has %d tokens; the context holds %d (--max-seq)", len(prompt), folder.Model.MaxSeq())
	}
	for _, id := range prompt {
		if id < 0 || id >= folder.Model.Vocab {
			return fail("token id %d is outside the vocabulary [0, %d)", id, folder.Model.Vocab)
		}
	}
	if at := folder.Model.DequantizedAtLoad(); len(at) > 0 {
		fmt.Fprintf(stderr, "gcomp generate: note: %d quantized layers whose groups the dequantize op cannot hold are dequantized at load (f32 on the device)\n", len(at))
	}
	e, err := folder.Model.Open(lm.EngineOptions{Device: *f.device, Compiler: copt, NoSimChecks: *f.noSimChecks})
	if err != nil {
		return fail("%v", err)
	}
	defer e.Close()
	loaded := time.Since(start)

	out := bufio.NewWriter(stdout)
	defer out.Flush()
	var stream interface {
		Next(int) (string, error)
		Flush() string
	}
	if tok != nil {
		d := tok.NewStreamDecoder()
		for _, id := range prompt { // continue the prompt's text (a leading space stays)
			d.Next(id)
		}
		stream = d
	}
	var generated []int
	var logits [][]float32
	var firstToken, decodeTime time.Duration
	stop := ""
	t0 := time.Now()
	last := t0
	opts := lm.GenerateOptions{Sampling: sampling, MaxNewTokens: *f.maxNew, StopIDs: folder.StopIDs(), KeepLogits: *f.logitsOut != ""}
	for t, err := range e.Generate(context.Background(), prompt, opts) {
		if err != nil {
			out.Flush()
			return fail("%v", err)
		}
		now := time.Now()
		if generated == nil {
			firstToken = now.Sub(t0)
		} else {
			decodeTime += now.Sub(last)
		}
		last = now
		generated = append(generated, t.ID)
		logits = append(logits, t.Logits)
		stop = t.Stop
		if stream == nil {
			fmt.Fprintf(out, "%d ", t.ID)
		} else if text, err := stream.Next(t.ID); err == nil {
			io.WriteString(out, text)
		}
		out.Flush()
	}
	if stream != nil {
		io.WriteString(out, stream.Flush())
	}
	io.WriteString(out, "\n")
	out.Flush()

	var writes []tensorio.FileWrite
	if *f.idsOut != "" {
		data, _ := json.Marshal(map[string][]int{"prompt_ids": prompt, "generated_ids": append([]int{}, generated...)})
		writes = append(writes, tensorio.FileWrite{Path: *f.idsOut, Write: func(w io.Writer) error {
			_, err := w.Write(append(data, '\n'))
			return err
		}})
	}
	if *f.logitsOut != "" {
		a := logitsArray(logits, folder.Model.Vocab)
		writes = append(writes, tensorio.FileWrite{Path: *f.logitsOut, Write: func(w io.Writer) error { return tensorio.WriteNPY(w, a) }})
	}
	if err := tensorio.WriteFilesAtomic(writes...); err != nil {
		return fail("%v", err)
	}
	if *f.stats {
		return generateStats(stderr, e, folder.Model, folder.Config, loaded, len(prompt), len(generated), firstToken, decodeTime, stop)
	}
	return nil
}

// logitsArray stacks the rows of logits as f32 [len(logits), vocab].
func logitsArray(rows [][]float32, vocab int) *tensorio.Array {
	t := tensor.New(ir.T(ir.F32, len(rows), vocab))
	for i, r := range rows {
		for j, v := range r {
			t.F[i*vocab+j] = float64(v)
		}
	}
	return t.Array()
}

func generateStats(w io.Writer, e *lm.Engine, m *lm.Model, cfg *checkpoint.Config, loaded time.Duration, promptLen, n int, prefill, decode time.Duration, stop string) error {
	fmt.Fprintf(w, "model: %s\n", checkpoint.Describe(cfg))
	fmt.Fprintf(w, "device: %s; loaded and compiled in %s\n", e.Device(), loaded.Round(time.Millisecond))
	fmt.Fprintf(w, "prefill: %d tokens in %s (%.1f tokens/s), with the first token's choice\n", promptLen, prefill.Round(time.Microsecond), float64(promptLen)/prefill.Seconds())
	if n > 1 {
		fmt.Fprintf(w, "decode: %d tokens in %s (%.2f tokens/s, %s per token)\n", n-1, decode.Round(time.Microsecond), float64(n-1)/decode.Seconds(), (decode / time.Duration(n-1)).Round(time.Microsecond))
	}
	fmt.Fprintf(w, "stopped: %s after %d tokens\n", stop, n)
	s, err := e.DecodeStats()
	if err != nil {
		return fmt.Errorf("gcomp generate: %v", err)
	}
	bytes, params := passes.ParamStats(e.DecodeGraph())
	fmt.Fprintf(w, "weights on the device: %s for %d parameters (%.3f bytes/parameter)\n", bytesText(bytes), params, float64(bytes)/float64(max(params, 1)))
	if at := m.DequantizedAtLoad(); len(at) > 0 {
		fmt.Fprintf(w, "dequantized at load (groups the dequantize op cannot hold; f32 on the device): %d layers: %s\n", len(at), strings.Join(at, ", "))
	}
	fmt.Fprintf(w, "decode step, modeled on one H100 (not a measurement): %d kernels, %s DRAM, %.1f µs as a CUDA graph (%.0f tokens/s); weights and cache alone %.1f µs\n",
		s.Kernels, bytesText(s.DRAMBytes), s.ModeledGraphTimeUS, 1e6/s.ModeledGraphTimeUS, float64(s.IdealDRAMBytes)/3.35e6)
	return nil
}

func bytesText(n int64) string {
	switch {
	case n >= 1<<30:
		return fmt.Sprintf("%.2f GiB", float64(n)/(1<<30))
	case n >= 1<<20:
		return fmt.Sprintf("%.1f MiB", float64(n)/(1<<20))
	}
	return fmt.Sprintf("%d B", n)
}

// parseIDs reads comma-separated token ids; "" is none.
func parseIDs(s string) ([]int, error) {
	var ids []int
	if strings.TrimSpace(s) == "" {
		return ids, nil
	}
	for _, f := range strings.Split(s, ",") {
		f = strings.TrimSpace(f)
		n, err := strconv.ParseInt(f, 10, 64)
		if err != nil || n < 0 || n > math.MaxInt32 {
			return nil, fmt.Errorf("%q is not a token id (a whole number ≥ 0)", f)
		}
		ids = append(ids, int(n))
	}
	return ids, nil
}

func cmdTokenize(args []string, stdout, stderr io.Writer) error {
	fs := flag.NewFlagSet("tokenize", flag.ContinueOnError)
	text := fs.String("text", "", "the text to encode; prints its ids as a JSON array")
	decode := fs.String("decode", "", "comma-separated ids to decode; prints their text")
	plain := fs.Bool("no-special", false, "encode without the BOS/EOS the tokenizer's configuration adds, and read special tokens in the text as text")
	dir, err := parseModelArgs(fs, args, stdout, "MODEL_DIR (--text TEXT | --decode 1,2,3) [--no-special]")
	if err != nil {
		return err
	}
	fail := func(format string, args ...any) error { return fmt.Errorf("gcomp tokenize: "+format, args...) }
	if given(fs, "text") == given(fs, "decode") {
		return fail("give --text TEXT or --decode 1,2,3 (one of them)")
	}
	if !lm.HasTokenizer(dir) {
		if _, err := os.Stat(dir); err != nil {
			return fail("%s: no such folder", dir)
		}
		return fail("%s has no tokenizer (tokenizer.json, vocab.json with merges.txt, or tokenizer.model)", dir)
	}
	tok, err := tokenizer.Load(dir)
	if err != nil {
		return fail("%v", err)
	}
	if given(fs, "decode") {
		ids, err := parseIDs(*decode)
		if err != nil {
			return fail("--decode: %v", err)
		}
		s, err := tok.Decode(ids)
		if err != nil {
			return fail("%v", err)
		}
		_, err = fmt.Fprintln(stdout, s)
		return err
	}
	var ids []int
	if *plain {
		ids, err = tok.EncodeWith(*text, tokenizer.EncodeOptions{})
	} else {
		ids, err = tok.Encode(*text)
	}
	if err != nil {
		return fail("%v", err)
	}
	data, _ := json.Marshal(append([]int{}, ids...))
	_, err = fmt.Fprintln(stdout, string(data))
	return err
}

// programFlags choose which program of a language-model folder gcomp dump prints.
type programFlags struct {
	program   *string
	promptLen *int
}

func addProgramFlags(fs *flag.FlagSet) programFlags {
	return programFlags{
		program:   fs.String("program", "", "for a Hugging Face model folder: the program to print, prefill or decode"),
		promptLen: fs.Int("prompt-len", 8, "with --program prefill: the prompt's length in tokens"),
	}
}

// isModelFolder reports whether path is a folder with a config.json (a Hugging Face model).
func isModelFolder(path string) bool {
	st, err := os.Stat(path)
	if err != nil || !st.IsDir() {
		return false
	}
	_, err = os.Stat(filepath.Join(path, "config.json"))
	return err == nil
}

// graph builds the chosen program of the model in folder dir from its config.json alone.
// maxBatch > 0 builds the decode program over a batch in [1, maxBatch], as a packed engine runs it.
func (p programFlags) graph(dir string, batch, maxBatch int) (*ir.Graph, error) {
	fail := func(format string, args ...any) error { return fmt.Errorf("gcomp dump: "+format, args...) }
	if !isModelFolder(dir) {
		return nil, fail("--program needs a Hugging Face model folder with a config.json; %s is not one", dir)
	}
	if *p.program == "" {
		return nil, fail("%s is a model folder: choose its program with --program prefill or --program decode", dir)
	}
	cc, err := checkpoint.ReadConfig(dir)
	if err != nil {
		return nil, fail("%v", err)
	}
	cfg, err := lm.FromCheckpoint(cc)
	if err != nil {
		return nil, fail("%v", err)
	}
	if maxBatch != 0 {
		if batch != 0 || *p.program != "decode" {
			return nil, fail("--max-batch %d: only for --program decode, without --batch", maxBatch)
		}
		g, err := lm.PackedDecodeGraph(cfg, maxBatch)
		if err != nil {
			return nil, fail("%v", err)
		}
		return g, nil
	}
	if batch == 0 {
		batch = 1
	}
	if batch < 1 || batch > lm.MaxBatch {
		return nil, fail("--batch %d: want 1 to %d", batch, lm.MaxBatch)
	}
	g, err := lm.ProgramGraph(cfg, *p.program, batch, *p.promptLen)
	if err != nil {
		return nil, fail("%v", err)
	}
	return g, nil
}
