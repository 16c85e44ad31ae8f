package rosbag

import (
	"cmp"
	"fmt"
	"io"
	"os"
	"slices"
)

// DefaultChunkSize is the uncompressed chunk size at which the writer
// starts a new chunk: rosbag's default (768 KiB).
const DefaultChunkSize = 768 << 10

// WriterOptions configures a Writer.
type WriterOptions struct {
	// ChunkSize: a chunk is written out once its data reaches this many
	// bytes. It defaults to DefaultChunkSize.
	ChunkSize int
}

// Connection is a topic with its message type: a connection record of the
// bag. The writer stores Topic, Type, MD5Sum, MessageDefinition, CallerID
// (if not empty) and Latching (if true) in the connection header; the reader
// fills every field, Header with all the connection header's fields.
type Connection struct {
	ID                uint32
	Topic             string
	Type              string
	MD5Sum            string
	MessageDefinition string
	CallerID          string
	// Latching makes `rosbag play` publish the topic latched, so a
	// subscriber that connects later still gets the last message.
	Latching bool
	Header   map[string]string
}

// connKey identifies a connection: a topic and a message type.
type connKey struct{ topic, typ string }

// indexEntry is one message of a chunk: its time and the offset of its
// record in the chunk's data.
type indexEntry struct {
	time   Time
	offset uint32
}

// chunkInfo describes a chunk written to (or read from) the file.
type chunkInfo struct {
	pos        int64
	start, end Time
	counts     map[uint32]uint32 // connection -> messages in the chunk
}

// Writer writes a ROS bag, format 2.0, as rosbag does: the bag header
// record padded to 4096 bytes, uncompressed chunks holding connection and
// message data records, each chunk followed by its index data records, and
// at Close the connection and chunk info records and the bag header
// rewritten with their position and counts. A Writer is not safe for
// concurrent use. After an error every later call returns it.
type Writer struct {
	w         io.WriteSeeker
	pos       int64 // where the next byte goes
	chunkSize int

	conns   []Connection       // by ID
	byKey   map[connKey]uint32 // topic and type -> ID
	written []bool             // by ID: its connection record is in a chunk

	chunk      []byte // the open chunk's data
	chunkMsgs  int
	chunkStart Time
	chunkEnd   Time
	chunkIdx   map[uint32][]indexEntry
	chunks     []chunkInfo

	rec    []byte // scratch: a record being built
	msg    []byte // scratch: a message being serialised
	err    error
	closed bool
	file   *os.File // set by Create
}

// NewWriter starts a bag on w, writing the format line and a bag header
// record with no index (index_pos 0: a reader treats the bag as unfinished
// until Close rewrites it). w must be positioned at its start.
func NewWriter(w io.WriteSeeker, opts WriterOptions) (*Writer, error) {
	if opts.ChunkSize <= 0 {
		opts.ChunkSize = DefaultChunkSize
	}
	bw := &Writer{w: w, chunkSize: opts.ChunkSize, byKey: map[connKey]uint32{}, chunkIdx: map[uint32][]indexEntry{}}
	if err := bw.emit([]byte(magic)); err != nil {
		return nil, err
	}
	if err := bw.emit(bagHeader(nil, 0, 0, 0)); err != nil {
		return nil, err
	}
	return bw, nil
}

// bagHeader appends the bag header record, its header and padding
// together bagHeaderLen bytes.
func bagHeader(b []byte, indexPos uint64, conns, chunks uint32) []byte {
	start := len(b)
	b = appendHeader(b, opField(opBagHeader), u64Field("index_pos", indexPos), u32Field("conn_count", conns), u32Field("chunk_count", chunks))
	pad := bagHeaderLen - (len(b) - start - 4)
	b = putU32(b, uint32(pad))
	for range pad {
		b = append(b, ' ')
	}
	return b
}

func (w *Writer) emit(b []byte) error {
	if w.err != nil {
		return w.err
	}
	n, err := w.w.Write(b)
	w.pos += int64(n)
	if err != nil {
		w.err = fmt.Errorf("rosbag: write: %w", err)
	}
	return w.err
}

func (w *Writer) check() error {
	if w.closed {
		return ErrClosed
	}
	return w.err
}

// AddConnection registers a connection and returns its ID. Topic, Type and
// MD5Sum are required; MessageDefinition should be the type's full
// definition, or tools cannot decode the messages. Adding the same topic and
// type again returns the first connection's ID.
func (w *Writer) AddConnection(c Connection) (uint32, error) {
	if err := w.check(); err != nil {
		return 0, err
	}
	if c.Topic == "" || c.Type == "" || c.MD5Sum == "" {
		return 0, fmt.Errorf("rosbag: connection %q of type %q: topic, type and md5sum are required", c.Topic, c.Type)
	}
	key := connKey{c.Topic, c.Type}
	if id, ok := w.byKey[key]; ok {
		return id, nil
	}
	c.ID = uint32(len(w.conns))
	c.Header = nil
	w.conns = append(w.conns, c)
	w.written = append(w.written, false)
	w.byKey[key] = c.ID
	return c.ID, nil
}

// Connections returns the connections added so far.
func (w *Writer) Connections() []Connection { return slices.Clone(w.conns) }

// WriteMessage appends a message record of connection conn at time t with
// serialised data. Messages may come in any time order.
func (w *Writer) WriteMessage(conn uint32, t Time, data []byte) error {
	if err := w.check(); err != nil {
		return err
	}
	if int(conn) >= len(w.conns) {
		return fmt.Errorf("rosbag: write message: no connection %d", conn)
	}
	if !w.written[conn] {
		w.chunk = w.appendConnection(w.chunk, &w.conns[conn])
		w.written[conn] = true
	}
	if w.chunkMsgs == 0 || t.Less(w.chunkStart) {
		w.chunkStart = t
	}
	if w.chunkMsgs == 0 || w.chunkEnd.Less(t) {
		w.chunkEnd = t
	}
	w.chunkIdx[conn] = append(w.chunkIdx[conn], indexEntry{time: t, offset: uint32(len(w.chunk))})
	w.chunkMsgs++
	w.chunk = appendMessageHeader(w.chunk, conn, t)
	w.chunk = putBytes(w.chunk, data)
	if len(w.chunk) >= w.chunkSize {
		return w.flushChunk()
	}
	return nil
}

// Write serialises m and writes it on topic at time t, adding the
// connection for the topic and m's type on first use.
func (w *Writer) Write(topic string, t Time, m Message) error {
	mt := m.MessageType()
	id, ok := w.byKey[connKey{topic, mt.Name}]
	if !ok {
		var err error
		if id, err = w.AddConnection(Connection{Topic: topic, Type: mt.Name, MD5Sum: mt.MD5Sum, MessageDefinition: mt.Definition}); err != nil {
			return err
		}
	}
	w.msg = m.MarshalROS(w.msg[:0])
	return w.WriteMessage(id, t, w.msg)
}

// appendMessageHeader appends a message data record's header (op, conn,
// time) without allocating: the same bytes as appendHeader would write.
func appendMessageHeader(b []byte, conn uint32, t Time) []byte {
	b = putU32(b, uint32(4+len("op=")+1+4+len("conn=")+4+4+len("time=")+8))
	b = putU32(b, uint32(len("op=")+1))
	b = append(b, "op="...)
	b = append(b, opMessageData)
	b = putU32(b, uint32(len("conn=")+4))
	b = append(b, "conn="...)
	b = putU32(b, conn)
	b = putU32(b, uint32(len("time=")+8))
	b = append(b, "time="...)
	return putTime(b, t)
}

// appendConnection appends a connection record.
func (w *Writer) appendConnection(b []byte, c *Connection) []byte {
	b = appendHeader(b, opField(opConnection), u32Field("conn", c.ID), strField("topic", c.Topic))
	fields := []field{strField("topic", c.Topic), strField("type", c.Type), strField("md5sum", c.MD5Sum),
		strField("message_definition", c.MessageDefinition)}
	if c.CallerID != "" {
		fields = append(fields, strField("callerid", c.CallerID))
	}
	if c.Latching {
		fields = append(fields, strField("latching", "1"))
	}
	// The record's data is the connection header, in header encoding.
	return appendHeader(b, fields...)
}

// flushChunk writes the open chunk and its index data records.
func (w *Writer) flushChunk() error {
	if w.chunkMsgs == 0 {
		return w.err
	}
	info := chunkInfo{pos: w.pos, start: w.chunkStart, end: w.chunkEnd, counts: map[uint32]uint32{}}
	w.rec = appendHeader(w.rec[:0], opField(opChunk), strField("compression", "none"), u32Field("size", uint32(len(w.chunk))))
	w.rec = putU32(w.rec, uint32(len(w.chunk)))
	if err := w.emit(w.rec); err != nil {
		return err
	}
	if err := w.emit(w.chunk); err != nil {
		return err
	}
	w.rec = w.rec[:0]
	for _, id := range sortedKeys(w.chunkIdx) {
		es := w.chunkIdx[id]
		if len(es) == 0 {
			continue
		}
		slices.SortStableFunc(es, func(a, b indexEntry) int { return cmpTime(a.time, b.time) })
		info.counts[id] = uint32(len(es))
		w.rec = appendHeader(w.rec, opField(opIndexData), u32Field("ver", indexVersion), u32Field("conn", id), u32Field("count", uint32(len(es))))
		w.rec = putU32(w.rec, uint32(12*len(es)))
		for _, e := range es {
			w.rec = putU32(putTime(w.rec, e.time), e.offset)
		}
	}
	if err := w.emit(w.rec); err != nil {
		return err
	}
	w.chunks = append(w.chunks, info)
	w.chunk = w.chunk[:0]
	w.chunkMsgs = 0
	for id, es := range w.chunkIdx { // keep the slices for the next chunk
		w.chunkIdx[id] = es[:0]
	}
	return nil
}

func cmpTime(a, b Time) int {
	if c := cmp.Compare(a.Sec, b.Sec); c != 0 {
		return c
	}
	return cmp.Compare(a.Nsec, b.Nsec)
}

func sortedKeys[V any](m map[uint32]V) []uint32 {
	ks := make([]uint32, 0, len(m))
	for k := range m {
		ks = append(ks, k)
	}
	slices.Sort(ks)
	return ks
}

// finish writes the last chunk, the index section and the final bag header.
func (w *Writer) finish() error {
	if err := w.flushChunk(); err != nil {
		return err
	}
	indexPos := w.pos
	w.rec = w.rec[:0]
	var conns uint32
	for i := range w.conns {
		if w.written[i] {
			w.rec = w.appendConnection(w.rec, &w.conns[i])
			conns++
		}
	}
	for _, c := range w.chunks {
		w.rec = appendHeader(w.rec, opField(opChunkInfo), u32Field("ver", chunkInfoVersion), u64Field("chunk_pos", uint64(c.pos)),
			timeField("start_time", c.start), timeField("end_time", c.end), u32Field("count", uint32(len(c.counts))))
		w.rec = putU32(w.rec, uint32(8*len(c.counts)))
		for _, id := range sortedKeys(c.counts) {
			w.rec = putU32(putU32(w.rec, id), c.counts[id])
		}
	}
	if err := w.emit(w.rec); err != nil {
		return err
	}
	if _, err := w.w.Seek(headerStart, io.SeekStart); err != nil {
		w.err = fmt.Errorf("rosbag: seek to the bag header: %w", err)
		return w.err
	}
	w.pos = headerStart
	return w.emit(bagHeader(w.rec[:0], uint64(indexPos), conns, uint32(len(w.chunks))))
}

// Close writes what is buffered and the index, and rewrites the bag header.
// A Writer made by Create then syncs the file and renames it to its final
// name. Closing twice returns ErrClosed.
func (w *Writer) Close() error {
	if w.closed {
		return ErrClosed
	}
	err := w.finish()
	w.closed = true
	if w.file != nil {
		return w.commit(err)
	}
	return err
}
