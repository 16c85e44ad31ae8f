// image_codec.c: see image_codec.h.
#include "image_codec.h"

#include <setjmp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <jpeglib.h>
#include <png.h>

static void copy_msg(char *dst, size_t n, const char *src) {
	if (n == 0) return;
	snprintf(dst, n, "%s", src);
}

// ---- JPEG ----

typedef struct {
	struct jpeg_error_mgr pub;
	jmp_buf jump;
	int warnings;
	char first[JMSG_LENGTH_MAX];
	char fatal[JMSG_LENGTH_MAX];
} jpeg_err;

typedef struct {
	struct jpeg_progress_mgr pub;
	int max_scans;
} jpeg_progress;

static void jpeg_error_exit(j_common_ptr c) {
	jpeg_err *e = (jpeg_err *)c->err;
	(*c->err->format_message)(c, e->fatal);
	longjmp(e->jump, 1);
}

// Warnings (level -1) are counted and the first kept; trace messages
// (level >= 0) are dropped. Nothing is printed.
static void jpeg_emit(j_common_ptr c, int level) {
	jpeg_err *e = (jpeg_err *)c->err;
	if (level < 0) {
		if (e->warnings == 0) (*c->err->format_message)(c, e->first);
		e->warnings++;
	}
}

static void jpeg_silent(j_common_ptr c) { (void)c; }

// A progressive JPEG may hold any number of scans, each a pass over the
// whole image: a small file can cost seconds. Refuse past max_scans.
static void jpeg_progress_monitor(j_common_ptr c) {
	j_decompress_ptr d = (j_decompress_ptr)c;
	jpeg_progress *p = (jpeg_progress *)c->progress;
	if (d->input_scan_number > p->max_scans) {
		jpeg_err *e = (jpeg_err *)c->err;
		snprintf(e->fatal, sizeof e->fatal, "more than %d scans", p->max_scans);
		longjmp(e->jump, 1);
	}
}

int ttm_decode_jpeg(const unsigned char *data, size_t size, unsigned char *dst, int width, int height,
	int max_scans, char *msg, size_t msglen) {
	struct jpeg_decompress_struct cinfo;
	jpeg_err err;
	jpeg_progress progress;
	memset(&cinfo, 0, sizeof cinfo);
	memset(&err, 0, sizeof err);
	memset(&progress, 0, sizeof progress);
	cinfo.err = jpeg_std_error(&err.pub);
	err.pub.error_exit = jpeg_error_exit;
	err.pub.emit_message = jpeg_emit;
	err.pub.output_message = jpeg_silent;
	if (setjmp(err.jump)) {
		jpeg_destroy_decompress(&cinfo);
		copy_msg(msg, msglen, err.fatal);
		return TTM_DECODE_ERROR;
	}
	jpeg_create_decompress(&cinfo);
	progress.pub.progress_monitor = jpeg_progress_monitor;
	progress.max_scans = max_scans;
	cinfo.progress = &progress.pub;
	jpeg_mem_src(&cinfo, data, (unsigned long)size);
	jpeg_read_header(&cinfo, TRUE);
	if ((int)cinfo.image_width != width || (int)cinfo.image_height != height) {
		snprintf(err.fatal, sizeof err.fatal, "libjpeg reads %ux%u", cinfo.image_width, cinfo.image_height);
		longjmp(err.jump, 1);
	}
	cinfo.out_color_space = JCS_EXT_BGR;
	jpeg_start_decompress(&cinfo);
	if (cinfo.output_components != 3) {
		snprintf(err.fatal, sizeof err.fatal, "libjpeg gives %d components", cinfo.output_components);
		longjmp(err.jump, 1);
	}
	while (cinfo.output_scanline < cinfo.output_height) {
		JSAMPROW row = dst + (size_t)cinfo.output_scanline * (size_t)width * 3;
		jpeg_read_scanlines(&cinfo, &row, 1);
	}
	jpeg_finish_decompress(&cinfo);
	jpeg_destroy_decompress(&cinfo);
	if (err.warnings > 0) {
		copy_msg(msg, msglen, err.first);
		return TTM_DECODE_CORRUPT;
	}
	return TTM_DECODE_OK;
}

// ---- PNG ----

typedef struct {
	jmp_buf jump;
	const unsigned char *data;
	size_t size, pos;
	int warnings;
	char first[128];
	char fatal[128];
	png_bytep *rows;
} png_state;

static void png_fail(png_structp png, png_const_charp m) {
	png_state *s = (png_state *)png_get_error_ptr(png);
	copy_msg(s->fatal, sizeof s->fatal, m);
	longjmp(s->jump, 1);
}

static void png_warn(png_structp png, png_const_charp m) {
	png_state *s = (png_state *)png_get_error_ptr(png);
	if (s->warnings == 0) copy_msg(s->first, sizeof s->first, m);
	s->warnings++;
}

static void png_read_mem(png_structp png, png_bytep out, size_t n) {
	png_state *s = (png_state *)png_get_io_ptr(png);
	if (n > s->size - s->pos) png_error(png, "read past the end of the data");
	memcpy(out, s->data + s->pos, n);
	s->pos += n;
}

// Colour-management chunks are ignored (as OpenCV ignores them), so that
// libpng's complaints about their profiles are not taken for corruption.
static const png_byte ignored_chunks[] = "cHRM\0gAMA\0iCCP\0sRGB\0";

int ttm_decode_png(const unsigned char *data, size_t size, unsigned char *dst, int width, int height,
	char *msg, size_t msglen) {
	png_state s;
	memset(&s, 0, sizeof s);
	s.data = data;
	s.size = size;
	png_structp png = png_create_read_struct(PNG_LIBPNG_VER_STRING, &s, png_fail, png_warn);
	if (png == NULL) {
		copy_msg(msg, msglen, "libpng: out of memory");
		return TTM_DECODE_ERROR;
	}
	png_infop info = png_create_info_struct(png);
	if (info == NULL) {
		png_destroy_read_struct(&png, NULL, NULL);
		copy_msg(msg, msglen, "libpng: out of memory");
		return TTM_DECODE_ERROR;
	}
	if (setjmp(s.jump)) {
		png_destroy_read_struct(&png, &info, NULL);
		free(s.rows);
		copy_msg(msg, msglen, s.fatal);
		return TTM_DECODE_ERROR;
	}
	png_set_read_fn(png, &s, png_read_mem);
	png_set_keep_unknown_chunks(png, PNG_HANDLE_CHUNK_NEVER, ignored_chunks, 4);
	png_read_info(png, info);
	png_uint_32 w, h;
	int depth, colour;
	png_get_IHDR(png, info, &w, &h, &depth, &colour, NULL, NULL, NULL);
	if ((int)w != width || (int)h != height) {
		snprintf(s.fatal, sizeof s.fatal, "libpng reads %ux%u", (unsigned)w, (unsigned)h);
		longjmp(s.jump, 1);
	}
	if (depth == 16) png_set_strip_16(png);
	if (colour == PNG_COLOR_TYPE_PALETTE) png_set_palette_to_rgb(png);
	if (colour == PNG_COLOR_TYPE_GRAY && depth < 8) png_set_expand_gray_1_2_4_to_8(png);
	if (colour == PNG_COLOR_TYPE_GRAY || colour == PNG_COLOR_TYPE_GRAY_ALPHA) png_set_gray_to_rgb(png);
	if (png_get_valid(png, info, PNG_INFO_tRNS)) png_set_tRNS_to_alpha(png);
	png_set_strip_alpha(png);
	png_set_bgr(png);
	png_set_interlace_handling(png);
	png_read_update_info(png, info);
	if (png_get_channels(png, info) != 3 || png_get_bit_depth(png, info) != 8) {
		snprintf(s.fatal, sizeof s.fatal, "libpng gives %d channels of %d bits", png_get_channels(png, info), png_get_bit_depth(png, info));
		longjmp(s.jump, 1);
	}
	s.rows = malloc(sizeof(png_bytep) * (size_t)height);
	if (s.rows == NULL) png_error(png, "out of memory");
	for (int y = 0; y < height; y++) s.rows[y] = dst + (size_t)y * (size_t)width * 3;
	png_read_image(png, s.rows);
	png_read_end(png, NULL);
	png_destroy_read_struct(&png, &info, NULL);
	free(s.rows);
	if (s.warnings > 0) {
		copy_msg(msg, msglen, s.first);
		return TTM_DECODE_CORRUPT;
	}
	return TTM_DECODE_OK;
}
