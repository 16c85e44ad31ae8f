package language_test

import (
	"fmt"
	"strings"

	"github.com/ttmrobot/ttm/language"
)

func ExampleEncoder() {
	vocab, err := language.ParseVocab(strings.NewReader("ttm-vocab 1 4\npick\nup\nthe\napple\n"))
	if err != nil {
		panic(err)
	}
	m, err := language.NewModel(language.DefaultConfig(), vocab)
	if err != nil {
		panic(err)
	}
	m.Init(1)
	enc := language.NewEncoder(m, 0)
	e, _ := enc.Encode("Pick up the apple!")
	again, _ := enc.Encode("pick up the apple")
	fmt.Println(len(e), &e[0] == &again[0])
	tok, _ := m.Tokenizer.Tokenize("pick up the mug")
	fmt.Println(tok.Words, len(tok.Pieces), "pieces") // 3 known words + the 6 n-grams of "<mug>"
	// Output:
	// 512 true
	// [pick up the mug] 9 pieces
}

func ExampleCheckEmbedding() {
	msg := &language.Float32MultiArray{Data: make([]float32, 511)}
	_, err := language.CheckEmbedding(msg, 512)
	fmt.Println(err)
	// Output:
	// bad instruction embedding: 511 values after data_offset 0, the policy takes 512
}
