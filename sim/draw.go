package sim

/*
#cgo pkg-config: opencv4
#cgo CXXFLAGS: -std=c++11
#include <stdlib.h>
#include "draw_cv.h"
*/
import "C"

import (
	"errors"
	"fmt"
	"math"
	"unsafe"

	"gocv.io/x/gocv"
)

// drawShift is the number of fractional bits of polygon and circle
// coordinates: 1/16 pixel, so objects move smoothly at low resolution.
const drawShift = 4

// Draw list operations (see draw_cv.h).
const (
	opFill   = C.TTM_SIM_FILL
	opPoly   = C.TTM_SIM_POLY
	opCircle = C.TTM_SIM_CIRCLE
	opLine   = C.TTM_SIM_LINE
	opFields = C.TTM_SIM_OP_FIELDS
	maxPoly  = 32 // vertices of one polygon after clipping
)

// drawList is one frame's drawing, in painting order.
type drawList struct {
	ops []int32 // (n ops, opFields): kind, n, 0xRRGGBB, offset into pts
	pts []int32 // x, y pairs
}

func (d *drawList) reset() { d.ops, d.pts = d.ops[:0], d.pts[:0] }

func packRGB(c RGB) int32 { return int32(c[0])<<16 | int32(c[1])<<8 | int32(c[2]) }

func (d *drawList) fill(c RGB) {
	d.ops = append(d.ops, opFill, 0, packRGB(c), int32(len(d.pts)))
}

// poly adds a filled polygon of n points xy (2n fixed-point values).
func (d *drawList) poly(xy []int32, c RGB) {
	d.ops = append(d.ops, opPoly, int32(len(xy)/2), packRGB(c), int32(len(d.pts)))
	d.pts = append(d.pts, xy...)
}

// circle adds a filled disc; centre and radius in fixed point.
func (d *drawList) circle(x, y, r int32, c RGB) {
	d.ops = append(d.ops, opCircle, r, packRGB(c), int32(len(d.pts)))
	d.pts = append(d.pts, x, y)
}

// line adds a segment between integer pixels, thick pixels wide.
func (d *drawList) line(x0, y0, x1, y1, thick int32, c RGB) {
	d.ops = append(d.ops, opLine, thick, packRGB(c), int32(len(d.pts)))
	d.pts = append(d.pts, x0, y0, x1, y1)
}

// canvas is an OpenCV image the draw list is painted on.
type canvas struct {
	mat  gocv.Mat
	data []byte  // the Mat's pixels, (H, W, 3) RGB
	err  *C.char // the shim's error message; a field, so passing its address does not allocate
}

func newCanvas(h, w int) (*canvas, error) {
	m := gocv.NewMatWithSize(h, w, gocv.MatTypeCV8UC3)
	data, err := m.DataPtrUint8()
	if err != nil || len(data) != h*w*3 {
		m.Close()
		return nil, fmt.Errorf("sim: canvas %dx%d: %v", h, w, err)
	}
	return &canvas{mat: m, data: data}, nil
}

func (c *canvas) close() {
	c.mat.Close()
	c.data = nil
}

// paint draws the list on the canvas in one call into OpenCV.
func (c *canvas) paint(d *drawList) error {
	if len(d.ops) == 0 {
		return nil
	}
	if len(d.pts) == 0 {
		d.pts = append(d.pts, 0, 0) // so &pts[0] exists
	}
	if len(d.pts) > math.MaxInt32 {
		return errors.New("sim: draw list too long")
	}
	c.err = nil
	rc := C.ttm_sim_draw(unsafe.Pointer(c.mat.Ptr()), (*C.int32_t)(unsafe.Pointer(&d.ops[0])), C.int(len(d.ops)/opFields),
		(*C.int32_t)(unsafe.Pointer(&d.pts[0])), C.int(len(d.pts)), drawShift, &c.err)
	if rc != 0 {
		msg := "unknown error"
		if c.err != nil {
			msg = C.GoString(c.err)
			C.free(unsafe.Pointer(c.err))
			c.err = nil
		}
		return fmt.Errorf("sim: opencv: %s", msg)
	}
	return nil
}
