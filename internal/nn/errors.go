package nn

import "fmt"

func checkLen(what string, s []float32, want int) {
	if len(s) < want {
		panic(fmt.Sprintf("nn: %s has %d elements, need %d", what, len(s), want))
	}
}
