package tokenizer

import (
	"fmt"
	"strings"
)

// parseGPT2 reads GPT-2's original pair of files: vocab.json (piece → id) and merges.txt (one
// "a b" merge per line by priority, after an optional "#version" line). They describe a
// byte-level BPE with GPT-2's split pattern.
func parseGPT2(vocabFile string, vocabData []byte, mergesFile string, mergesData []byte) (*Tokenizer, error) {
	t := &Tokenizer{bos: -1, kind: "byte-level BPE (vocab.json + merges.txt)"}
	m := &t.m
	m.algo, m.unk, m.byteLevel, m.split = bpeRanks, -1, true, splitGPT2
	var vocab map[string]int
	if err := decodeJSON(vocabFile, vocabData, &vocab); err != nil {
		return nil, err
	}
	if err := m.setVocab(vocabFile, "the top level", vocab, len(vocabData)); err != nil {
		return nil, err
	}
	m.merges = make(map[[2]int]merge)
	rank := 0
	for i, line := range strings.Split(string(mergesData), "\n") {
		line = strings.TrimSuffix(line, "\r")
		if line == "" || (i == 0 && strings.HasPrefix(line, "#version")) {
			continue
		}
		pair := strings.Split(line, " ")
		if len(pair) != 2 || pair[0] == "" || pair[1] == "" {
			return nil, &fileError{file: fmt.Sprintf("%s:%d", mergesFile, i+1), msg: fmt.Sprintf("%q is not a merge \"a b\"", line)}
		}
		if missing, ok := m.addMerge(rank, pair[0], pair[1]); !ok {
			return nil, &fileError{file: fmt.Sprintf("%s:%d", mergesFile, i+1), msg: fmt.Sprintf("%q is not in the vocabulary", missing)}
		}
		rank++
	}
	t.finish()
	return t, nil
}
