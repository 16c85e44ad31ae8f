//go:build amd64 && !purego

package nn

import "golang.org/x/sys/cpu"

//go:noescape
func panel16AVX512(c *float32, ldc int, xp *float32, w *float32, k int, rows int)

//go:noescape
func packRowsAVX512(xp *float32, in *float32, k int, nr int)

var hasAVX512 = cpu.X86.HasAVX512F

func panel16(out []float32, ldc int, xp, panel []float32, k, nr int) {
	if !hasAVX512 || k == 0 {
		panel16Generic(out, ldc, xp, panel, k, nr)
		return
	}
	// The kernel touches rows [0, nr) of out, 16 wide, and k*16 of xp and panel.
	_ = out[(nr-1)*ldc+PanelWidth-1]
	_ = xp[k*PanelWidth-1]
	_ = panel[k*PanelWidth-1]
	panel16AVX512(&out[0], ldc, &xp[0], &panel[0], k, nr)
}

// packRows is packRowsGeneric; with AVX-512, 16x16 transposes in registers.
func packRows(xp, in []float32, nr, k int) {
	if !hasAVX512 || k == 0 {
		packRowsGeneric(xp, in, nr, k)
		return
	}
	// The kernel reads rows [0, nr) of in, k wide, and writes k*16 of xp.
	_ = in[(nr-1)*k+k-1]
	_ = xp[k*PanelWidth-1]
	packRowsAVX512(&xp[0], &in[0], k, nr)
}
