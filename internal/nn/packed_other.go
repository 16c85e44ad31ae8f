//go:build !amd64 || purego

package nn

func panel16(out []float32, ldc int, xp, panel []float32, k, nr int) {
	panel16Generic(out, ldc, xp, panel, k, nr)
}

func packRows(xp, in []float32, nr, k int) { packRowsGeneric(xp, in, nr, k) }
