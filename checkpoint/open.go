package checkpoint

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"github.com/gcomp/gcomp/tensorio"
)

// The weight files of a checkpoint folder, as Hugging Face names them.
const (
	WeightsFile = "model.safetensors"
	IndexFile   = "model.safetensors.index.json"
)

// maxIndexBytes bounds the shard index (a 70B model's index is about 100 KB).
const maxIndexBytes = 16 << 20

// Checkpoint is a checkpoint folder's weight files, opened (mapped where the system maps files)
// with every header validated; tensors are converted when asked for. Close releases the files.
type Checkpoint struct {
	Dir   string
	files []*tensorio.SafetensorsFile          // in name order
	where map[string]*tensorio.SafetensorsFile // tensor name → the file that holds it
	names []string                             // every tensor, sorted
}

// Open opens the weights of the checkpoint folder dir: model.safetensors, or else the shards that
// model.safetensors.index.json lists. The index and the shards must agree exactly: a shard listed
// but absent, a tensor the index places in a shard that does not hold it, a tensor in two shards
// and a tensor of a shard that the index does not list are each an error naming the index, the
// shard and the tensor. Nothing stays open after an error.
func Open(dir string) (*Checkpoint, error) {
	c := &Checkpoint{Dir: dir, where: map[string]*tensorio.SafetensorsFile{}}
	if err := c.open(); err != nil {
		c.Close()
		return nil, err
	}
	for name := range c.where {
		c.names = append(c.names, name)
	}
	slices.Sort(c.names)
	return c, nil
}

func (c *Checkpoint) open() error {
	single, err := resolve(c.Dir, WeightsFile)
	if err == nil {
		return c.add(single)
	}
	if !isNotExist(c.Dir, WeightsFile) {
		return err
	}
	index, err := resolve(c.Dir, IndexFile)
	if err != nil {
		if !isNotExist(c.Dir, IndexFile) {
			return err
		}
		msg := fmt.Sprintf("checkpoint: %s: no %s nor %s", c.Dir, WeightsFile, IndexFile)
		if _, err := os.Stat(filepath.Join(c.Dir, "pytorch_model.bin")); err == nil {
			msg += " (pytorch_model.bin is not read: convert it to safetensors)"
		}
		return errors.New(msg)
	}
	shards, err := readIndex(index)
	if err != nil {
		return err
	}
	for _, s := range shards {
		path, err := resolve(c.Dir, s.file)
		if err != nil {
			return fmt.Errorf("checkpoint: %s: shard %q: %v", index, s.file, strings.TrimPrefix(err.Error(), "checkpoint: "))
		}
		if err := c.add(path); err != nil {
			return err
		}
	}
	return c.agree(shards)
}

// isNotExist says whether dir/name is absent (rather than present but refused).
func isNotExist(dir, name string) bool {
	_, err := os.Lstat(filepath.Join(dir, name))
	return errors.Is(err, fs.ErrNotExist)
}

// add opens one weight file.
func (c *Checkpoint) add(path string) error {
	f, err := tensorio.OpenSafetensorsFile(path)
	if err != nil {
		return fmt.Errorf("checkpoint: %s", strings.TrimPrefix(err.Error(), "tensorio: "))
	}
	c.files = append(c.files, f)
	for _, name := range f.Names() {
		if other, ok := c.where[name]; ok {
			return fmt.Errorf("checkpoint: tensor %q is in two shards: %s and %s", name, other.Path(), path)
		}
		c.where[name] = f
	}
	return nil
}

// agree checks that the shards hold exactly what the index says, once every shard is open.
func (c *Checkpoint) agree(shards []*shard) error {
	for i, s := range shards {
		f := c.files[i]
		for _, name := range f.Names() {
			if !s.tensors[name] {
				return fmt.Errorf("checkpoint: %s holds tensor %q, which %s does not list there", f.Path(), name, s.index)
			}
		}
		for _, name := range s.names {
			if c.where[name] != f {
				return fmt.Errorf("checkpoint: %s lists tensor %q in shard %q, which does not hold it", s.index, name, s.file)
			}
		}
	}
	return nil
}

// shard is one file of a sharded checkpoint and the tensors the index places in it.
type shard struct {
	index, file string
	names       []string // sorted
	tensors     map[string]bool
}

// readIndex reads model.safetensors.index.json: its weight_map, tensor name → shard file, grouped by
// shard in name order.
func readIndex(path string) ([]*shard, error) {
	data, err := tensorio.ReadFile(path, maxIndexBytes)
	if err != nil {
		return nil, fmt.Errorf("checkpoint: %w", err)
	}
	shards, err := parseIndex(path, data)
	if err != nil {
		return nil, fmt.Errorf("checkpoint: %s: %w", path, err)
	}
	return shards, nil
}

func parseIndex(path string, data []byte) ([]*shard, error) {
	var top map[string]json.RawMessage
	if err := json.Unmarshal(data, &top); err != nil || top == nil {
		if err == nil {
			err = errors.New("want an object")
		}
		return nil, fmt.Errorf("malformed JSON: %v", err)
	}
	wm := top["weight_map"]
	if wm == nil {
		return nil, errors.New("weight_map is missing")
	}
	// Walk weight_map's keys in order, to refuse a tensor listed twice (a map would keep one).
	dec := json.NewDecoder(bytes.NewReader(wm))
	if tok, err := dec.Token(); err != nil || tok != json.Delim('{') {
		return nil, errors.New("weight_map: want an object of tensor name to shard file")
	}
	byFile := map[string]*shard{}
	seen := map[string]bool{}
	for dec.More() {
		tok, err := dec.Token()
		if err != nil {
			return nil, fmt.Errorf("weight_map: %v", err)
		}
		name := tok.(string) // an object's keys are strings
		var file string
		if err := dec.Decode(&file); err != nil {
			return nil, fmt.Errorf("weight_map: tensor %q: want a shard file name", name)
		}
		if seen[name] {
			return nil, fmt.Errorf("weight_map lists tensor %q twice", name)
		}
		seen[name] = true
		if !strings.HasSuffix(file, ".safetensors") {
			return nil, fmt.Errorf("weight_map: tensor %q: shard %q is not a .safetensors file", name, file)
		}
		s := byFile[file]
		if s == nil {
			s = &shard{index: path, file: file, tensors: map[string]bool{}}
			byFile[file] = s
		}
		s.names = append(s.names, name)
		s.tensors[name] = true
	}
	if len(byFile) == 0 {
		return nil, errors.New("weight_map lists no tensors")
	}
	var shards []*shard
	for _, s := range byFile {
		slices.Sort(s.names)
		shards = append(shards, s)
	}
	slices.SortFunc(shards, func(a, b *shard) int { return strings.Compare(a.file, b.file) })
	return shards, nil
}

// Names lists every tensor of the checkpoint as its files name it, sorted.
func (c *Checkpoint) Names() []string { return c.names }

// Files lists the checkpoint's weight files in name order.
func (c *Checkpoint) Files() []string {
	var out []string
	for _, f := range c.files {
		out = append(out, f.Path())
	}
	return out
}

// Close closes every weight file; weights' Array must not be called after it.
func (c *Checkpoint) Close() error {
	var err error
	for _, f := range c.files {
		if cerr := f.Close(); err == nil {
			err = cerr
		}
	}
	c.files = nil
	return err
}
