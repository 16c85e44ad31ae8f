// image_codec.h: JPEG and PNG decoding with libjpeg(-turbo) and libpng,
// whose warnings about corrupt data are reported, never printed.
#ifndef TTM_IMAGE_CODEC_H
#define TTM_IMAGE_CODEC_H

#include <stddef.h>

// Results of ttm_decode_jpeg and ttm_decode_png.
enum {
	TTM_DECODE_OK = 0,
	TTM_DECODE_ERROR = 1,   // the library gave up; msg says why
	TTM_DECODE_CORRUPT = 2, // decoded, but the library warned; msg has the first warning
};

// ttm_decode_jpeg decodes a baseline or progressive 8-bit JPEG of width x
// height into dst, (height, width, 3) BGR. A progressive JPEG of more than
// max_scans scans is refused.
int ttm_decode_jpeg(const unsigned char *data, size_t size, unsigned char *dst, int width, int height,
	int max_scans, char *msg, size_t msglen);

// ttm_decode_png decodes a PNG of width x height into dst, (height, width, 3)
// BGR: 16-bit samples keep their high byte, grey is repeated, palettes are
// expanded, alpha is dropped (as OpenCV's imread does). Colour-management
// chunks are ignored.
int ttm_decode_png(const unsigned char *data, size_t size, unsigned char *dst, int width, int height,
	char *msg, size_t msglen);

#endif
