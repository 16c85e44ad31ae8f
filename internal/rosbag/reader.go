package rosbag

import (
	"bytes"
	"cmp"
	"compress/bzip2"
	"fmt"
	"io"
	"iter"
	"os"
	"slices"
	"strings"
)

// Reader reads a ROS bag of format 2.0 through its index: the connection
// and chunk info records at the header's index position, and the index data
// records after each chunk. Messages come out in time order (ties in file
// order: by chunk, then position in the chunk). Chunks may be uncompressed
// or bz2; anything that does not add up is an error wrapping ErrTruncated,
// ErrCorrupt, ErrUnindexed, ErrNotBag, ErrVersion or ErrCompression, never a
// panic. A Reader is not safe for
// concurrent use.
type Reader struct {
	r      io.ReaderAt
	size   int64
	closer io.Closer

	conns   []Connection
	byID    map[uint32]int // connection ID -> index in conns
	chunks  []readChunk
	entries []entry // every message, in time order

	cached    int // index of the chunk in data, -1 for none
	cacheData []byte
}

// readChunk is a chunk as the index describes it.
type readChunk struct {
	chunkInfo
	compression string
	size        uint32 // uncompressed
	dataPos     int64
	dataLen     int64
}

// entry is one message as the index gives it.
type entry struct {
	time   Time
	conn   uint32
	chunk  int
	offset uint32
}

// Open opens the bag at path; Close closes the file.
func Open(path string) (*Reader, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, fmt.Errorf("rosbag: %w", err)
	}
	st, err := f.Stat()
	if err != nil {
		f.Close()
		return nil, fmt.Errorf("rosbag: %w", err)
	}
	r, err := NewReader(f, st.Size())
	if err != nil {
		f.Close()
		return nil, fmt.Errorf("rosbag: %s: %w", path, err)
	}
	r.closer = f
	return r, nil
}

// Close closes the file Open opened.
func (r *Reader) Close() error {
	if r.closer == nil {
		return nil
	}
	err := r.closer.Close()
	r.closer = nil
	return err
}

// NewReader reads the bag's header and index from r, which holds size
// bytes.
func NewReader(r io.ReaderAt, size int64) (*Reader, error) {
	br := &Reader{r: r, size: size, byID: map[uint32]int{}, cached: -1}
	if err := br.readMagic(); err != nil {
		return nil, err
	}
	hdr, err := readRecordHeader(r, size, headerStart)
	if err != nil {
		return nil, fmt.Errorf("bag header: %w", err)
	}
	if err := hdr.expect(opBagHeader); err != nil {
		return nil, err
	}
	indexPos, err := hdr.u64("index_pos")
	if err != nil {
		return nil, err
	}
	nconn, err := hdr.u32("conn_count")
	if err != nil {
		return nil, err
	}
	nchunk, err := hdr.u32("chunk_count")
	if err != nil {
		return nil, err
	}
	if indexPos == 0 {
		return nil, fmt.Errorf("%w: the bag header's index_pos is 0", ErrUnindexed)
	}
	if indexPos < uint64(hdr.next) || indexPos > uint64(size) {
		return nil, fmt.Errorf("%w: index_pos %d is outside the file's records (%d..%d)", ErrTruncated, indexPos, hdr.next, size)
	}
	pos := int64(indexPos)
	for i := range nconn {
		rec, err := readRecordHeader(r, size, pos)
		if err != nil {
			return nil, fmt.Errorf("connection %d of %d: %w", i+1, nconn, err)
		}
		if err := br.addConnection(rec); err != nil {
			return nil, err
		}
		pos = rec.next
	}
	for i := range nchunk {
		rec, err := readRecordHeader(r, size, pos)
		if err != nil {
			return nil, fmt.Errorf("chunk info %d of %d: %w", i+1, nchunk, err)
		}
		if err := br.addChunk(rec); err != nil {
			return nil, err
		}
		pos = rec.next
	}
	for i := range br.chunks {
		if err := br.readIndex(i); err != nil {
			return nil, err
		}
	}
	slices.SortFunc(br.entries, func(a, b entry) int {
		if c := cmpTime(a.time, b.time); c != 0 {
			return c
		}
		if c := cmp.Compare(a.chunk, b.chunk); c != 0 {
			return c
		}
		return cmp.Compare(a.offset, b.offset)
	})
	return br, nil
}

func (r *Reader) readMagic() error {
	b := make([]byte, len(magic))
	n, _ := r.r.ReadAt(b, 0)
	b = b[:n]
	switch {
	case string(b) == magic:
		return nil
	case n < len(magic) && strings.HasPrefix(magic, string(b)):
		return fmt.Errorf("%w: the file ends after %d bytes, inside the format line", ErrTruncated, n)
	case bytes.HasPrefix(b, []byte("#ROSBAG V")):
		line, _, _ := strings.Cut(string(b), "\n")
		return fmt.Errorf("%w: %q (this reader reads V2.0)", ErrVersion, line)
	}
	return fmt.Errorf("%w: the file does not start with %q", ErrNotBag, strings.TrimSpace(magic))
}

// addConnection reads a connection record of the index section.
func (r *Reader) addConnection(rec fileRecord) error {
	if err := rec.expect(opConnection); err != nil {
		return err
	}
	id, err := rec.u32("conn")
	if err != nil {
		return err
	}
	topic, err := rec.str("topic")
	if err != nil {
		return err
	}
	if _, dup := r.byID[id]; dup {
		return rec.errorf("connection %d appears twice", id)
	}
	data, err := rec.readData(r.r)
	if err != nil {
		return err
	}
	c, err := parseConnectionHeader(data, rec.at)
	if err != nil {
		return err
	}
	c.ID, c.Topic = id, topic
	r.byID[id] = len(r.conns)
	r.conns = append(r.conns, c)
	return nil
}

// parseConnectionHeader reads a connection header (a record's data, in
// header encoding without an op field).
func parseConnectionHeader(data []byte, at int64) (Connection, error) {
	var c Connection
	fields, err := splitFields(data)
	if err != nil {
		return c, fmt.Errorf("%w: connection record at offset %d: %v", ErrCorrupt, at, err)
	}
	c.Header = make(map[string]string, len(fields))
	for k, v := range fields {
		c.Header[k] = string(v)
	}
	c.Type, c.MD5Sum, c.MessageDefinition = c.Header["type"], c.Header["md5sum"], c.Header["message_definition"]
	c.CallerID, c.Latching = c.Header["callerid"], c.Header["latching"] == "1"
	if c.Type == "" || c.MD5Sum == "" {
		return c, fmt.Errorf("%w: connection record at offset %d: no type or md5sum in the connection header", ErrCorrupt, at)
	}
	return c, nil
}

// addChunk reads a chunk info record and the chunk's header.
func (r *Reader) addChunk(rec fileRecord) error {
	if err := rec.expect(opChunkInfo); err != nil {
		return err
	}
	ver, err := rec.u32("ver")
	if err != nil {
		return err
	}
	if ver != chunkInfoVersion {
		return rec.errorf("version %d (want %d)", ver, chunkInfoVersion)
	}
	var c readChunk
	pos, err := rec.u64("chunk_pos")
	if err != nil {
		return err
	}
	if c.start, err = rec.time("start_time"); err != nil {
		return err
	}
	if c.end, err = rec.time("end_time"); err != nil {
		return err
	}
	count, err := rec.u32("count")
	if err != nil {
		return err
	}
	if int64(count)*8 != rec.dataLen {
		return rec.errorf("%d connections need %d bytes of data, the record has %d", count, 8*int64(count), rec.dataLen)
	}
	data, err := rec.readData(r.r)
	if err != nil {
		return err
	}
	c.counts = make(map[uint32]uint32, count)
	d := decoder{b: data, ctx: "chunk info"}
	for range count {
		id, n := d.u32("conn"), d.u32("count")
		if _, ok := r.byID[id]; !ok {
			return rec.errorf("unknown connection %d", id)
		}
		if _, dup := c.counts[id]; dup {
			return rec.errorf("connection %d listed twice", id)
		}
		c.counts[id] = n
	}
	if pos > uint64(r.size) {
		return rec.errorf("chunk_pos %d is past the end of the file (%d)", pos, r.size)
	}
	c.pos = int64(pos)
	ch, err := readRecordHeader(r.r, r.size, c.pos)
	if err != nil {
		return fmt.Errorf("chunk at %d: %w", pos, err)
	}
	if err := ch.expect(opChunk); err != nil {
		return err
	}
	if c.compression, err = ch.str("compression"); err != nil {
		return err
	}
	if c.size, err = ch.u32("size"); err != nil {
		return err
	}
	switch c.compression {
	case "none":
		if int64(c.size) != ch.dataLen {
			return ch.errorf("uncompressed, but size %d differs from its %d bytes of data", c.size, ch.dataLen)
		}
	case "bz2":
	default:
		return fmt.Errorf("%w: chunk at %d is compressed with %q (this reader reads none and bz2)", ErrCompression, pos, c.compression)
	}
	c.dataPos, c.dataLen = ch.dataPos, ch.dataLen
	r.chunks = append(r.chunks, c)
	return nil
}

// readIndex reads the index data records after chunk i.
func (r *Reader) readIndex(i int) error {
	c := &r.chunks[i]
	pos := c.dataPos + c.dataLen
	seen := make(map[uint32]bool, len(c.counts))
	for range len(c.counts) {
		rec, err := readRecordHeader(r.r, r.size, pos)
		if err != nil {
			return fmt.Errorf("index of the chunk at %d: %w", c.pos, err)
		}
		if err := rec.expect(opIndexData); err != nil {
			return err
		}
		ver, err := rec.u32("ver")
		if err != nil {
			return err
		}
		if ver != indexVersion {
			return rec.errorf("version %d (want %d)", ver, indexVersion)
		}
		id, err := rec.u32("conn")
		if err != nil {
			return err
		}
		count, err := rec.u32("count")
		if err != nil {
			return err
		}
		want, ok := c.counts[id]
		switch {
		case !ok || seen[id]:
			return rec.errorf("connection %d is not in the chunk info of the chunk at %d, or indexed twice", id, c.pos)
		case count != want:
			return rec.errorf("%d messages of connection %d, the chunk info says %d", count, id, want)
		case int64(count)*12 != rec.dataLen:
			return rec.errorf("%d entries need %d bytes, the record has %d", count, 12*int64(count), rec.dataLen)
		}
		seen[id] = true
		data, err := rec.readData(r.r)
		if err != nil {
			return err
		}
		d := decoder{b: data, ctx: "index data"}
		for range count {
			e := entry{time: d.time("time"), conn: id, chunk: i, offset: d.u32("offset")}
			if e.offset >= c.size {
				return rec.errorf("entry offset %d is past the chunk's %d bytes", e.offset, c.size)
			}
			if e.time.Less(c.start) || c.end.Less(e.time) {
				return rec.errorf("entry time %v is outside the chunk's [%v, %v]", e.time, c.start, c.end)
			}
			r.entries = append(r.entries, e)
		}
		pos = rec.next
	}
	return nil
}

// chunkData returns chunk i's uncompressed data (cached: one chunk).
func (r *Reader) chunkData(i int) ([]byte, error) {
	if r.cached == i {
		return r.cacheData, nil
	}
	c := &r.chunks[i]
	var data []byte
	switch c.compression {
	case "none":
		if int64(cap(r.cacheData)) < c.dataLen {
			r.cacheData = make([]byte, c.dataLen)
		}
		data = r.cacheData[:c.dataLen]
		if _, err := r.r.ReadAt(data, c.dataPos); err != nil {
			return nil, fmt.Errorf("%w: chunk at %d: %v", ErrTruncated, c.pos, err)
		}
	case "bz2":
		var buf bytes.Buffer
		lr := io.LimitReader(bzip2.NewReader(io.NewSectionReader(r.r, c.dataPos, c.dataLen)), int64(c.size)+1)
		if _, err := buf.ReadFrom(lr); err != nil {
			return nil, fmt.Errorf("%w: bz2 chunk at %d: %v", ErrCorrupt, c.pos, err)
		}
		if buf.Len() != int(c.size) {
			return nil, fmt.Errorf("%w: bz2 chunk at %d decompresses to %d bytes, its header says %d", ErrCorrupt, c.pos, buf.Len(), c.size)
		}
		data = buf.Bytes()
		r.cacheData = data
	}
	r.cached = i
	return data, nil
}

// Connections returns the bag's connections, in the order of the index.
func (r *Reader) Connections() []Connection { return slices.Clone(r.conns) }

// MessageCount returns the number of messages the index lists.
func (r *Reader) MessageCount() int { return len(r.entries) }

// Count returns the number of messages on topic.
func (r *Reader) Count(topic string) int {
	n := 0
	for _, e := range r.entries {
		if r.conns[r.byID[e.conn]].Topic == topic {
			n++
		}
	}
	return n
}

// TimeRange returns the times of the first and last messages.
func (r *Reader) TimeRange() (start, end Time) {
	if len(r.entries) == 0 {
		return Time{}, Time{}
	}
	return r.entries[0].time, r.entries[len(r.entries)-1].time
}

// Record is one message as stored: its connection, the time it was
// recorded and its serialised data. Data is valid until the iteration
// moves on.
type Record struct {
	Conn *Connection
	Time Time
	Data []byte
}

// Decode deserialises the record into m after checking that the
// connection's type and MD5 sum are m's (ErrType otherwise).
func (rec Record) Decode(m Message) error {
	mt := m.MessageType()
	if rec.Conn.Type != mt.Name || rec.Conn.MD5Sum != mt.MD5Sum {
		return fmt.Errorf("%w: topic %s carries %s (md5 %s), not %s (md5 %s)", ErrType, rec.Conn.Topic, rec.Conn.Type, rec.Conn.MD5Sum, mt.Name, mt.MD5Sum)
	}
	if err := m.UnmarshalROS(rec.Data); err != nil {
		return fmt.Errorf("topic %s at %v: %w", rec.Conn.Topic, rec.Time, err)
	}
	return nil
}

// Messages iterates over the messages on the given topics (all topics if
// none) in time order. An error ends the iteration.
func (r *Reader) Messages(topics ...string) iter.Seq2[Record, error] {
	want := make(map[uint32]bool, len(r.conns))
	for _, c := range r.conns {
		want[c.ID] = len(topics) == 0 || slices.Contains(topics, c.Topic)
	}
	return func(yield func(Record, error) bool) {
		for _, e := range r.entries {
			if !want[e.conn] {
				continue
			}
			rec, err := r.read(e)
			if !yield(rec, err) || err != nil {
				return
			}
		}
	}
}

// read reads the message record an index entry points at.
func (r *Reader) read(e entry) (Record, error) {
	data, err := r.chunkData(e.chunk)
	if err != nil {
		return Record{}, err
	}
	c := &r.chunks[e.chunk]
	rec, err := parseChunkRecord(data, int(e.offset), c.pos)
	if err != nil {
		return Record{}, err
	}
	if err := rec.expect(opMessageData); err != nil {
		return Record{}, err
	}
	conn, err := rec.u32("conn")
	if err != nil {
		return Record{}, err
	}
	t, err := rec.time("time")
	if err != nil {
		return Record{}, err
	}
	if conn != e.conn || t != e.time {
		return Record{}, rec.errorf("holds connection %d at %v, the index says connection %d at %v", conn, t, e.conn, e.time)
	}
	return Record{Conn: &r.conns[r.byID[conn]], Time: t, Data: rec.data}, nil
}
