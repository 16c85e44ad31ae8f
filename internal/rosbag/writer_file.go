package rosbag

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
)

// ActiveSuffix is appended to a bag's name while Create's writer is open.
const ActiveSuffix = ".active"

// Create starts a bag that appears at path only when complete. It writes
// path + ".active" (replacing a stale one, which only a crash leaves); Close
// finishes the bag, syncs it to disk, renames it to path and syncs the
// directory, so path never names a partial file, whatever happens. Abort
// (or a failed Close) removes the .active file. A crash or kill -9 leaves
// the .active file with the header's index position at 0: its complete
// chunks are intact and `rosbag reindex` can rebuild the index, but no
// reader mistakes it for a finished bag (ErrUnindexed).
func Create(path string, opts WriterOptions) (*Writer, error) {
	active := path + ActiveSuffix
	f, err := os.OpenFile(active, os.O_CREATE|os.O_TRUNC|os.O_WRONLY, 0o644)
	if err != nil {
		return nil, fmt.Errorf("rosbag: create %s: %w", path, err)
	}
	w, err := NewWriter(f, opts)
	if err != nil {
		f.Close()
		os.Remove(active)
		return nil, fmt.Errorf("rosbag: create %s: %w", path, err)
	}
	w.file = f
	return w, nil
}

// commit ends Create's file after finish: sync, close and rename on
// success; close and remove on failure.
func (w *Writer) commit(err error) error {
	f := w.file
	w.file = nil
	active := f.Name()
	path := active[:len(active)-len(ActiveSuffix)]
	if err == nil {
		err = f.Sync()
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = os.Rename(active, path)
	}
	if err != nil {
		os.Remove(active)
		return fmt.Errorf("rosbag: close %s: %w", path, err)
	}
	return syncDir(filepath.Dir(path))
}

// Abort drops the bag: for a writer made by Create, the .active file is
// closed and removed and nothing appears at the bag's name. Writing after
// Abort is ErrClosed. Aborting a closed writer does nothing.
func (w *Writer) Abort() error {
	if w.closed {
		return nil
	}
	w.closed = true
	if w.file == nil {
		return nil
	}
	f := w.file
	w.file = nil
	err := f.Close()
	if rerr := os.Remove(f.Name()); rerr != nil && !errors.Is(rerr, os.ErrNotExist) && err == nil {
		err = rerr
	}
	if err != nil {
		return fmt.Errorf("rosbag: abort %s: %w", f.Name(), err)
	}
	return nil
}

// syncDir makes a rename in dir durable.
func syncDir(dir string) error {
	d, err := os.Open(dir)
	if err != nil {
		return fmt.Errorf("rosbag: sync %s: %w", dir, err)
	}
	defer d.Close()
	if err := d.Sync(); err != nil {
		return fmt.Errorf("rosbag: sync %s: %w", dir, err)
	}
	return nil
}
