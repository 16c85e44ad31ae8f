package rosbag

import "errors"

// Errors the reader returns; the wrapped message says where and what. Test
// with errors.Is.
var (
	// ErrNotBag: the file does not start with "#ROSBAG V2.0\n".
	ErrNotBag = errors.New("not a ROS bag")
	// ErrVersion: a bag of another format version (1.2, 1.1 ...).
	ErrVersion = errors.New("unsupported bag format version")
	// ErrTruncated: the file ends inside a record, or a record points past
	// the end of the file.
	ErrTruncated = errors.New("truncated bag")
	// ErrCorrupt: a record that cannot be what it claims (missing or
	// malformed header fields, an offset that does not point at a record
	// of the right kind, counts that disagree).
	ErrCorrupt = errors.New("corrupt bag")
	// ErrUnindexed: the bag header's index position is zero: the writer
	// never finished it (a crash, or a recording still under way). ROS's
	// `rosbag reindex` rebuilds the index of such a file.
	ErrUnindexed = errors.New("bag has no index (not closed)")
	// ErrCompression: a chunk compressed with something other than none
	// or bz2 (lz4 needs a library this package does not use).
	ErrCompression = errors.New("unsupported chunk compression")
	// ErrMessage: message data that does not deserialise as its type.
	ErrMessage = errors.New("malformed message")
	// ErrType: a connection whose type or MD5 sum is not the one asked for.
	ErrType = errors.New("message type mismatch")
	// ErrClosed: a write after Close or Abort.
	ErrClosed = errors.New("bag writer closed")
	// ErrTime: a time before 1970 or after 2106, which ROS time (two
	// unsigned 32-bit words) cannot hold.
	ErrTime = errors.New("time out of ROS range")
)
