package rawimage

// Conversions of the raw encodings into rgb8. Each reads h rows of step
// bytes from src and writes dst, (h, w, 3) RGB, tight. Those of yuv422,
// yuv422_yuy2 and the Bayer mosaics have the arithmetic of OpenCV 4.6's
// cvtColor, which cv_bridge uses: the same pixels, byte for byte (tested
// against gocv.CvtColor in package vision).

func rgb8ToRGB(dst, src []byte, step, w, h int)  { interleavedToRGB(dst, src, step, w, h, 3, 0, 1, 2) }
func bgr8ToRGB(dst, src []byte, step, w, h int)  { interleavedToRGB(dst, src, step, w, h, 3, 2, 1, 0) }
func rgba8ToRGB(dst, src []byte, step, w, h int) { interleavedToRGB(dst, src, step, w, h, 4, 0, 1, 2) }
func bgra8ToRGB(dst, src []byte, step, w, h int) { interleavedToRGB(dst, src, step, w, h, 4, 2, 1, 0) }
func mono8ToRGB(dst, src []byte, step, w, h int) { interleavedToRGB(dst, src, step, w, h, 1, 0, 0, 0) }

// interleavedToRGB copies pixels of bpp bytes whose red, green and blue
// samples sit at offsets r, g and b (all 0 for grey).
func interleavedToRGB(dst, src []byte, step, w, h, bpp, r, g, b int) {
	for y := range h {
		s := src[y*step : y*step+bpp*w]
		d := dst[3*w*y : 3*w*(y+1)]
		if bpp == 3 && r == 0 && b == 2 {
			copy(d, s)
			continue
		}
		for x := range w {
			p := s[bpp*x : bpp*x+bpp]
			d[3*x], d[3*x+1], d[3*x+2] = p[r], p[g], p[b]
		}
	}
}

// BT.601 limited-range YUV to RGB in 20-bit fixed point, OpenCV's
// constants and rounding (color_yuv.simd.hpp):
//
//	R = (CY·max(Y-16, 0) + CVR·(V-128)               + 2^19) >> 20
//	G = (CY·max(Y-16, 0) + CVG·(V-128) + CUG·(U-128) + 2^19) >> 20
//	B = (CY·max(Y-16, 0)               + CUB·(U-128) + 2^19) >> 20
//
// each saturated to 0..255.
const (
	yuvCY    = 1220542
	yuvCUB   = 2116026
	yuvCUG   = -409993
	yuvCVG   = -852492
	yuvCVR   = 1673527
	yuvShift = 20
	yuvHalf  = 1 << (yuvShift - 1)
)

// uyvyToRGB converts yuv422 (UYVY: U0 Y0 V0 Y1), as COLOR_YUV2RGB_UYVY.
func uyvyToRGB(dst, src []byte, step, w, h int) { yuv422ToRGB(dst, src, step, w, h, 1, 3, 0, 2) }

// yuy2ToRGB converts yuv422_yuy2 (YUYV: Y0 U0 Y1 V0), as
// COLOR_YUV2RGB_YUY2.
func yuy2ToRGB(dst, src []byte, step, w, h int) { yuv422ToRGB(dst, src, step, w, h, 0, 2, 1, 3) }

// yuv422ToRGB converts 4:2:2 rows whose groups of four bytes hold luma
// at y0 and y1 and chroma at u and v (offsets 0..3) into two RGB pixels.
func yuv422ToRGB(dst, src []byte, step, w, h, y0, y1, u, v int) {
	y0, y1, u, v = y0&3, y1&3, u&3, v&3 // in range: no bounds checks below
	for y := range h {
		s := src[y*step : y*step+2*w]
		d := dst[3*w*y : 3*w*(y+1)]
		for i := 0; i+4 <= len(s) && 3*(i/2)+6 <= len(d); i += 4 {
			p := s[i : i+4 : i+4]
			o := d[3*(i/2) : 3*(i/2)+6 : 3*(i/2)+6]
			uu, vv := int(p[u])-128, int(p[v])-128
			ruv := yuvHalf + yuvCVR*vv
			guv := yuvHalf + yuvCVG*vv + yuvCUG*uu
			buv := yuvHalf + yuvCUB*uu
			l0 := max(int(p[y0])-16, 0) * yuvCY
			l1 := max(int(p[y1])-16, 0) * yuvCY
			o[0], o[1], o[2] = sat8((l0+ruv)>>yuvShift), sat8((l0+guv)>>yuvShift), sat8((l0+buv)>>yuvShift)
			o[3], o[4], o[5] = sat8((l1+ruv)>>yuvShift), sat8((l1+guv)>>yuvShift), sat8((l1+buv)>>yuvShift)
		}
	}
}

func sat8(v int) byte {
	if uint(v) <= 255 {
		return byte(v)
	}
	if v < 0 {
		return 0
	}
	return 255
}

// The four 8-bit Bayer patterns, named by ROS after their top-left 2x2
// cell read row by row; the argument is where the red sample sits in it.
// OpenCV names a pattern after the second row's second and third pixels,
// so cv_bridge maps bayer_rggb8 to COLOR_BayerBG2RGB, bggr8 to BayerRG,
// gbrg8 to BayerGR and grbg8 to BayerGB.
func bayerRGGBToRGB(dst, src []byte, step, w, h int) { bayerToRGB(dst, src, step, w, h, 0, 0) }
func bayerBGGRToRGB(dst, src []byte, step, w, h int) { bayerToRGB(dst, src, step, w, h, 1, 1) }
func bayerGBRGToRGB(dst, src []byte, step, w, h int) { bayerToRGB(dst, src, step, w, h, 0, 1) }
func bayerGRBGToRGB(dst, src []byte, step, w, h int) { bayerToRGB(dst, src, step, w, h, 1, 0) }

// bayerToRGB demosaics an 8-bit Bayer mosaic whose red samples sit at the
// columns x%2 == redX of the rows y%2 == redY (blue at the others of the
// other rows, green everywhere else), as OpenCV 4.6's bilinear
// COLOR_Bayer*2RGB (demosaicing.cpp, Bayer2RGB_). A pixel's own colour is
// its sample; the missing ones are rounded means of the nearest samples:
//
//	at red or blue: G = (N+S+W+E+2)>>2, the other = (NW+NE+SW+SE+2)>>2
//	at green:       its row's colour = (W+E+1)>>1, the other = (N+S+1)>>1
//
// Only pixels with all eight neighbours are computed. Then, as in OpenCV,
// the first and last columns copy their neighbours, and the first and last
// rows copy theirs; a mosaic narrower or shorter than 3 pixels is black.
func bayerToRGB(dst, src []byte, step, w, h, redX, redY int) {
	if w < 3 || h < 3 {
		clear(dst[:3*w*h])
		return
	}
	stride := 3 * w
	for y := 1; y < h-1; y++ {
		up := src[(y-1)*step : (y-1)*step+w]
		mid := src[y*step : y*step+w]
		dn := src[(y+1)*step : (y+1)*step+w]
		out := dst[y*stride : (y+1)*stride]
		// c: the channel of this row's red or blue samples; 2-c the other.
		c, own := 0, redX // own: the parity of x where the sample is red or blue
		if y&1 != redY {
			c, own = 2, 1-redX
		}
		for x := 1; x < w-1; x++ {
			o := out[3*x : 3*x+3 : 3*x+3]
			n, s, wv, e := int(up[x]), int(dn[x]), int(mid[x-1]), int(mid[x+1])
			if x&1 == own {
				o[c] = mid[x]
				o[1] = byte((n + s + wv + e + 2) >> 2)
				o[2-c] = byte((int(up[x-1]) + int(up[x+1]) + int(dn[x-1]) + int(dn[x+1]) + 2) >> 2)
			} else {
				o[1] = mid[x]
				o[c] = byte((wv + e + 1) >> 1)
				o[2-c] = byte((n + s + 1) >> 1)
			}
		}
		copy(out[0:3], out[3:6])
		copy(out[stride-3:], out[stride-6:stride-3])
	}
	copy(dst[:stride], dst[stride:2*stride])
	copy(dst[(h-1)*stride:h*stride], dst[(h-2)*stride:(h-1)*stride])
}
