package vision

import (
	"bytes"
	"encoding/json"
	"fmt"
	"math"
)

// Interpolation selects the resize filter. Each reproduces OpenCV's
// cv::resize on float images with the flag of the same name, so a training
// pipeline that uses cv2.resize sees the same pixels.
type Interpolation string

const (
	// Bilinear is INTER_LINEAR: half-pixel centres, edges replicated
	// (tf.image.resize's bilinear without antialiasing gives the same).
	Bilinear Interpolation = "bilinear"
	// Nearest is INTER_NEAREST: source index floor(dst·src/dst_size).
	Nearest Interpolation = "nearest"
	// Area is INTER_AREA: a box filter over the covered source pixels when
	// shrinking both axes; when either axis grows, OpenCV's linear variant.
	Area Interpolation = "area"
)

// ChannelOrder is the order of the three colour channels the backbone
// expects in its input tensor.
type ChannelOrder string

const (
	RGB ChannelOrder = "rgb"
	BGR ChannelOrder = "bgr"
)

// AspectMode says how the frame's aspect ratio is treated. Only Stretch
// exists: the frame is resized to exactly Height x Width, as RT-1 does.
type AspectMode string

// Stretch resizes without preserving the aspect ratio.
const Stretch AspectMode = "stretch"

// Layout is the memory layout of the backbone input. Only NCHW exists.
type Layout string

// NCHW is planar: all of channel 0, then channel 1, then channel 2.
const NCHW Layout = "NCHW"

// PreprocessConfig describes how a Frame becomes the backbone's input
// tensor. It is stored in the policy checkpoint as JSON (field names
// below); ParsePreprocessConfig fills omitted fields from
// DefaultPreprocess. The input is 1 x 3 x Height x Width float32:
//
//	x[c, y, x] = (resize(frame)[y, x, channel c] · Scale - Mean[c]) / Std[c]
//
// where channel c is the c-th of ChannelOrder. Mean and Std are in that
// order too.
type PreprocessConfig struct {
	Height        int           `json:"height"`        // backbone input rows, 300 for EfficientNet-B3
	Width         int           `json:"width"`         // backbone input columns
	Interpolation Interpolation `json:"interpolation"` // bilinear (default), nearest, area
	Aspect        AspectMode    `json:"aspect"`        // stretch
	ChannelOrder  ChannelOrder  `json:"channel_order"` // rgb (default) or bgr
	Scale         float32       `json:"scale"`         // applied to 0..255 samples first: 1/255
	Mean          [3]float32    `json:"mean"`          // subtracted after Scale: ImageNet 0.485, 0.456, 0.406
	Std           [3]float32    `json:"std"`           // divides last: ImageNet 0.229, 0.224, 0.225
	Layout        Layout        `json:"layout"`        // NCHW
}

// DefaultPreprocess is RT-1's preprocessing for EfficientNet-B3: 300x300,
// bilinear, aspect not preserved, RGB, scaled to [0, 1] and normalised with
// the ImageNet mean and standard deviation, NCHW.
func DefaultPreprocess() PreprocessConfig {
	return PreprocessConfig{
		Height: 300, Width: 300,
		Interpolation: Bilinear,
		Aspect:        Stretch,
		ChannelOrder:  RGB,
		Scale:         1.0 / 255,
		Mean:          [3]float32{0.485, 0.456, 0.406},
		Std:           [3]float32{0.229, 0.224, 0.225},
		Layout:        NCHW,
	}
}

// MaxInputSide bounds the backbone input size.
const MaxInputSide = 4096

// Validate reports the first field that makes c unusable.
func (c PreprocessConfig) Validate() error {
	if c.Height <= 0 || c.Width <= 0 || c.Height > MaxInputSide || c.Width > MaxInputSide {
		return fmt.Errorf("preprocess: size %dx%d (height x width) must be within 1..%d", c.Height, c.Width, MaxInputSide)
	}
	switch c.Interpolation {
	case Bilinear, Nearest, Area:
	default:
		return fmt.Errorf("preprocess: interpolation %q (want bilinear, nearest or area)", c.Interpolation)
	}
	switch c.Aspect {
	case Stretch:
	default:
		return fmt.Errorf("preprocess: aspect %q (want stretch)", c.Aspect)
	}
	switch c.ChannelOrder {
	case RGB, BGR:
	default:
		return fmt.Errorf("preprocess: channel_order %q (want rgb or bgr)", c.ChannelOrder)
	}
	switch c.Layout {
	case NCHW:
	default:
		return fmt.Errorf("preprocess: layout %q (want NCHW)", c.Layout)
	}
	if !finite32(c.Scale) || c.Scale == 0 {
		return fmt.Errorf("preprocess: scale %v must be finite and non-zero", c.Scale)
	}
	for i := range 3 {
		if !finite32(c.Mean[i]) {
			return fmt.Errorf("preprocess: mean[%d] = %v is not finite", i, c.Mean[i])
		}
		if !finite32(c.Std[i]) || c.Std[i] <= 0 {
			return fmt.Errorf("preprocess: std[%d] = %v must be finite and positive", i, c.Std[i])
		}
	}
	return nil
}

// InputLen is the number of floats of one input tensor: 3·Height·Width.
func (c PreprocessConfig) InputLen() int { return 3 * c.Height * c.Width }

// JSON returns the configuration as it is stored in a checkpoint.
func (c PreprocessConfig) JSON() string {
	b, err := json.Marshal(c)
	if err != nil {
		panic("vision: " + err.Error()) // plain struct of numbers and strings
	}
	return string(b)
}

// ParsePreprocessConfig reads a configuration from JSON. Omitted fields
// keep DefaultPreprocess's values; unknown fields are an error (a
// misspelt "channel_order" must not silently fall back to RGB).
func ParsePreprocessConfig(b []byte) (PreprocessConfig, error) {
	c := DefaultPreprocess()
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&c); err != nil {
		return PreprocessConfig{}, fmt.Errorf("preprocess config: %w", err)
	}
	if dec.More() {
		return PreprocessConfig{}, fmt.Errorf("preprocess config: data after the JSON object")
	}
	if err := c.Validate(); err != nil {
		return PreprocessConfig{}, err
	}
	return c, nil
}

func finite32(v float32) bool {
	return !math.IsNaN(float64(v)) && !math.IsInf(float64(v), 0)
}
