package tokenizer_test

import (
	"fmt"

	"github.com/gcomp/gcomp/tokenizer"
)

// A SentencePiece BPE model with byte fallback: "中" is not in its small vocabulary, so it is
// three byte tokens, which the stream decoder holds back until the character is complete.
func Example() {
	tok, err := tokenizer.Load("testdata/spm/bpe")
	if err != nil {
		fmt.Println(err)
		return
	}
	ids, _ := tok.Encode("the 中 program")
	fmt.Println(ids, tok.BOS(), tok.EOS())
	d := tok.NewStreamDecoder()
	var chunks []string
	for _, id := range ids {
		s, _ := d.Next(id)
		chunks = append(chunks, s)
	}
	fmt.Printf("%q\n", chunks)
	_, err = tok.Decode([]int{tok.VocabSize()})
	fmt.Println(err)
	// Output:
	// [1 268 617 231 187 176 471] 1 [2]
	// ["" "the" " " "" "" "中" " program"]
	// tokenizer: token id 700 is not in the vocabulary (700 ids)
}
