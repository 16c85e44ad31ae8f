// Package rosbag reads and writes ROS 1 bag files (format 2.0) in plain Go,
// and (de)serialises the few message types the project records:
// std_msgs/Header, String, Bool, Float32MultiArray and sensor_msgs/Image,
// CompressedImage, with their exact MD5 sums and full definitions, so the
// files are what `rosbag record` would write: `rosbag info`, `rosbag check`,
// `rosbag play` and `rostopic echo -b` read them.
//
// # Format
//
// A bag (http://wiki.ros.org/Bags/Format/2.0) is the line "#ROSBAG V2.0",
// then records: a length-prefixed header of name=value fields (the record's
// kind in "op") and length-prefixed data. The writer lays them out as
// rosbag does:
//
//	#ROSBAG V2.0\n
//	bag header       index_pos, conn_count, chunk_count; padded with spaces to 4096 bytes
//	chunk            compression "none"; data: connection records (first use), message data records
//	index data ...   one per connection in the chunk: (time, offset in the chunk) per message
//	... more chunks, each followed by its index data records ...
//	connection ...   every connection: topic, type, md5sum, message_definition [, callerid, latching]
//	chunk info ...   every chunk: position, start and end time, messages per connection
//
// The bag header is written first with index_pos 0 and rewritten by Close
// once the index section exists.
//
// # Crash safety
//
// Create writes NAME.bag.active and Close renames it to NAME.bag only after
// the index is written and the file synced (then the directory is synced):
// a crash, kill or SIGINT never leaves a partial file under the bag's name.
// Abort removes the .active file. A leftover .active file has index_pos 0;
// the reader refuses it with ErrUnindexed, and `rosbag reindex` can rebuild
// its index from the complete chunks.
//
// # Reading
//
// Open (or NewReader on any io.ReaderAt) reads the header and the index;
// Reader.Messages iterates in time order. Damaged input of any kind gives
// an error wrapping one of the Err values, never a panic (FuzzReadBag).
// Chunks compressed with bz2 are read too; lz4 is ErrCompression.
package rosbag
