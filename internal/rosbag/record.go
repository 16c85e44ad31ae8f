package rosbag

import (
	"bytes"
	"encoding/binary"
	"fmt"
	"io"
	"strings"
)

// The records of format 2.0. Each is
//
//	header_len uint32 | header: fields (field_len uint32, "name=value") | data_len uint32 | data
//
// with the record's kind in the header's "op" field.
const (
	magic = "#ROSBAG V2.0\n"

	opMessageData = 0x02
	opBagHeader   = 0x03
	opIndexData   = 0x04
	opChunk       = 0x05
	opChunkInfo   = 0x06
	opConnection  = 0x07

	// bagHeaderLen is the size of the bag header record's header plus its
	// padding (the data, spaces), as rosbag writes it, so the header can be
	// rewritten in place at Close.
	bagHeaderLen = 4096
	// headerStart is where the bag header record begins; chunks start at
	// headerStart + 4 + bagHeaderLen + 4.
	headerStart = int64(len(magic))

	indexVersion     = 1
	chunkInfoVersion = 1
)

var opNames = map[byte]string{opMessageData: "message data", opBagHeader: "bag header", opIndexData: "index data",
	opChunk: "chunk", opChunkInfo: "chunk info", opConnection: "connection"}

func opName(op byte) string {
	if n, ok := opNames[op]; ok {
		return n
	}
	return fmt.Sprintf("op 0x%02x", op)
}

// field is one header field; values are raw bytes (integers little endian).
type field struct {
	name  string
	value []byte
}

func u32Field(name string, v uint32) field { return field{name, putU32(nil, v)} }
func u64Field(name string, v uint64) field { return field{name, putU64(nil, v)} }
func timeField(name string, t Time) field  { return field{name, putTime(nil, t)} }
func strField(name, v string) field        { return field{name, []byte(v)} }
func opField(op byte) field                { return field{"op", []byte{op}} }

// appendHeader appends a record header (its length, then the fields).
func appendHeader(b []byte, fields ...field) []byte {
	n := 0
	for _, f := range fields {
		n += 4 + len(f.name) + 1 + len(f.value)
	}
	b = putU32(b, uint32(n))
	for _, f := range fields {
		b = putU32(b, uint32(len(f.name)+1+len(f.value)))
		b = append(b, f.name...)
		b = append(b, '=')
		b = append(b, f.value...)
	}
	return b
}

// header is a parsed record header.
type header struct {
	op     byte
	fields map[string][]byte
	at     int64  // where the record starts (for errors)
	where  string // "file" or "chunk at N"
}

// parseHeader splits a record header into its fields. A header needs an op
// field of one byte.
func parseHeader(b []byte, at int64, where string) (header, error) {
	h := header{at: at, where: where}
	var err error
	if h.fields, err = splitFields(b); err != nil {
		return h, fmt.Errorf("%w: record at %s offset %d: %v", ErrCorrupt, where, at, err)
	}
	op, ok := h.fields["op"]
	if !ok || len(op) != 1 {
		return h, fmt.Errorf("%w: record at %s offset %d: no one-byte op field", ErrCorrupt, where, at)
	}
	h.op = op[0]
	return h, nil
}

// splitFields splits header-encoded fields (field_len uint32, name=value).
// A repeated name keeps the last value, as rosbag does.
func splitFields(b []byte) (map[string][]byte, error) {
	fields := map[string][]byte{}
	for off := 0; off < len(b); {
		if len(b)-off < 4 {
			return nil, fmt.Errorf("header field length cut short at byte %d of %d", off, len(b))
		}
		n := int64(binary.LittleEndian.Uint32(b[off:]))
		off += 4
		if n > int64(len(b)-off) {
			return nil, fmt.Errorf("header field of %d bytes overruns the %d-byte header", n, len(b))
		}
		f := b[off : off+int(n)]
		off += int(n)
		name, value, ok := bytes.Cut(f, []byte{'='})
		if !ok {
			return nil, fmt.Errorf("header field %q has no '='", printable(f))
		}
		fields[string(name)] = value
	}
	return fields, nil
}

// printable shortens b for an error message.
func printable(b []byte) string {
	if len(b) > 32 {
		b = b[:32]
	}
	return strings.ToValidUTF8(string(b), "?")
}

func (h header) errorf(format string, a ...any) error {
	return fmt.Errorf("%w: %s record at %s offset %d: %s", ErrCorrupt, opName(h.op), h.where, h.at, fmt.Sprintf(format, a...))
}

func (h header) expect(op byte) error {
	if h.op != op {
		return fmt.Errorf("%w: %s offset %d: expected a %s record, found a %s record", ErrCorrupt, h.where, h.at, opName(op), opName(h.op))
	}
	return nil
}

func (h header) raw(name string, size int) ([]byte, error) {
	v, ok := h.fields[name]
	if !ok {
		return nil, h.errorf("no %q field", name)
	}
	if size >= 0 && len(v) != size {
		return nil, h.errorf("field %q has %d bytes, want %d", name, len(v), size)
	}
	return v, nil
}

func (h header) u32(name string) (uint32, error) {
	v, err := h.raw(name, 4)
	if err != nil {
		return 0, err
	}
	return binary.LittleEndian.Uint32(v), nil
}

func (h header) u64(name string) (uint64, error) {
	v, err := h.raw(name, 8)
	if err != nil {
		return 0, err
	}
	return binary.LittleEndian.Uint64(v), nil
}

func (h header) time(name string) (Time, error) {
	v, err := h.raw(name, 8)
	if err != nil {
		return Time{}, err
	}
	return Time{Sec: binary.LittleEndian.Uint32(v), Nsec: binary.LittleEndian.Uint32(v[4:])}, nil
}

func (h header) str(name string) (string, error) {
	v, err := h.raw(name, -1)
	return string(v), err
}

// fileRecord is a record in the file: its header and where its data is.
type fileRecord struct {
	header
	dataPos int64
	dataLen int64
	next    int64 // position of the next record
}

// readRecordHeader reads the record at pos of r (size bytes long): the
// header is read and parsed, the data only located.
func readRecordHeader(r io.ReaderAt, size, pos int64) (fileRecord, error) {
	var rec fileRecord
	n, err := readU32At(r, size, pos, "record header length")
	if err != nil {
		return rec, err
	}
	hpos := pos + 4
	if int64(n) > size-hpos {
		return rec, fmt.Errorf("%w: record at offset %d has a %d-byte header, the file ends %d bytes later", ErrTruncated, pos, n, size-hpos)
	}
	hb := make([]byte, n)
	if _, err := r.ReadAt(hb, hpos); err != nil {
		return rec, fmt.Errorf("%w: record header at offset %d: %v", ErrTruncated, pos, err)
	}
	if rec.header, err = parseHeader(hb, pos, "file"); err != nil {
		return rec, err
	}
	dl, err := readU32At(r, size, hpos+int64(n), "record data length")
	if err != nil {
		return rec, err
	}
	rec.dataPos = hpos + int64(n) + 4
	rec.dataLen = int64(dl)
	if rec.dataLen > size-rec.dataPos {
		return rec, fmt.Errorf("%w: %s record at offset %d has %d bytes of data, the file ends %d bytes later", ErrTruncated, opName(rec.op), pos, dl, size-rec.dataPos)
	}
	rec.next = rec.dataPos + rec.dataLen
	return rec, nil
}

// readData reads a record's data.
func (rec fileRecord) readData(r io.ReaderAt) ([]byte, error) {
	b := make([]byte, rec.dataLen)
	if _, err := r.ReadAt(b, rec.dataPos); err != nil {
		return nil, fmt.Errorf("%w: %s record at offset %d: data: %v", ErrTruncated, opName(rec.op), rec.at, err)
	}
	return b, nil
}

func readU32At(r io.ReaderAt, size, pos int64, what string) (uint32, error) {
	if pos < 0 || size-pos < 4 {
		return 0, fmt.Errorf("%w: %s at offset %d: the file ends at %d", ErrTruncated, what, pos, size)
	}
	var b [4]byte
	if _, err := r.ReadAt(b[:], pos); err != nil {
		return 0, fmt.Errorf("%w: %s at offset %d: %v", ErrTruncated, what, pos, err)
	}
	return binary.LittleEndian.Uint32(b[:]), nil
}

// chunkRecord is a record inside a chunk's (uncompressed) data.
type chunkRecord struct {
	header
	data []byte
	next int
}

// parseChunkRecord parses the record at off of a chunk's data.
func parseChunkRecord(b []byte, off int, chunkPos int64) (chunkRecord, error) {
	var rec chunkRecord
	where := fmt.Sprintf("chunk at %d", chunkPos)
	if off < 0 || len(b)-off < 4 {
		return rec, fmt.Errorf("%w: %s: record at offset %d: the chunk ends at %d", ErrCorrupt, where, off, len(b))
	}
	n := int64(binary.LittleEndian.Uint32(b[off:]))
	hpos := off + 4
	if n > int64(len(b)-hpos) {
		return rec, fmt.Errorf("%w: %s: record at offset %d has a %d-byte header, the chunk ends %d bytes later", ErrCorrupt, where, off, n, len(b)-hpos)
	}
	var err error
	if rec.header, err = parseHeader(b[hpos:hpos+int(n)], int64(off), where); err != nil {
		return rec, err
	}
	dpos := hpos + int(n)
	if len(b)-dpos < 4 {
		return rec, fmt.Errorf("%w: %s: record at offset %d: data length cut short", ErrCorrupt, where, off)
	}
	dl := int64(binary.LittleEndian.Uint32(b[dpos:]))
	dpos += 4
	if dl > int64(len(b)-dpos) {
		return rec, fmt.Errorf("%w: %s: %s record at offset %d has %d bytes of data, the chunk ends %d bytes later", ErrCorrupt, where, opName(rec.op), off, dl, len(b)-dpos)
	}
	rec.data = b[dpos : dpos+int(dl) : dpos+int(dl)]
	rec.next = dpos + int(dl)
	return rec, nil
}
