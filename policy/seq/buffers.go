package seq

import "fmt"

// grow returns s with room for n floats, reallocating (and dropping the
// contents) when it has less.
func grow(s []float32, n int) []float32 {
	if cap(s) >= n {
		return s[:n]
	}
	return make([]float32, n, max(n, 2*cap(s)))
}

// growKeep is grow keeping the contents.
func growKeep(s []float32, n int) []float32 {
	if cap(s) >= n {
		return s[:n]
	}
	out := make([]float32, n, max(n, 2*cap(s)))
	copy(out, s)
	return out
}

func checkSizes(who string, got []int, want []int, names []string) {
	for i := range got {
		if got[i] != want[i] {
			panic(fmt.Sprintf("seq: %s: %s has %d floats, want %d", who, names[i], got[i], want[i]))
		}
	}
}
