package lm

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"

	"github.com/gcomp/gcomp/checkpoint"
	"github.com/gcomp/gcomp/tokenizer"
)

// A Folder is a Hugging Face model folder loaded whole: the model, its config.json, and its
// tokenizer when the folder ships one.
type Folder struct {
	Dir       string
	Model     *Model
	Config    *checkpoint.Config
	Tokenizer *tokenizer.Tokenizer // nil when the folder has no tokenizer file
}

// tokenizerFiles are the files tokenizer.Load reads a tokenizer from.
var tokenizerFiles = []string{"tokenizer.json", "vocab.json", "tokenizer.model"}

// HasTokenizer reports whether dir holds one of the files a tokenizer is read from.
func HasTokenizer(dir string) bool {
	for _, name := range tokenizerFiles {
		if _, err := os.Lstat(filepath.Join(dir, name)); err == nil || !errors.Is(err, fs.ErrNotExist) {
			return true
		}
	}
	return false
}

// LoadFolder loads dir's model (LoadCheckpoint, maxSeq as there) and, when the folder has one,
// its tokenizer, whose vocabulary must fit the model's.
func LoadFolder(dir string, maxSeq int) (*Folder, error) {
	f := &Folder{Dir: dir}
	if HasTokenizer(dir) {
		t, err := tokenizer.Load(dir)
		if err != nil {
			return nil, err
		}
		f.Tokenizer = t
	}
	m, cfg, err := LoadCheckpoint(dir, maxSeq)
	if err != nil {
		return nil, err
	}
	f.Model, f.Config = m, cfg
	if t := f.Tokenizer; t != nil && t.VocabSize() > m.Vocab {
		return nil, fmt.Errorf("lm: %s: the tokenizer has %d ids, more than the model's vocabulary of %d", dir, t.VocabSize(), m.Vocab)
	}
	return f, nil
}

// StopIDs are the ids that end generation: the tokenizer's EOS ids, else config.json's.
func (f *Folder) StopIDs() []int {
	if f.Tokenizer != nil && len(f.Tokenizer.EOS()) > 0 {
		return f.Tokenizer.EOS()
	}
	return f.Config.EOS
}
