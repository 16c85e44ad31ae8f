package sim

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
)

// A dataset is a folder of episode bags and an index, index.json, listing
// them with their task, instruction, length, success and seed.

// IndexFile is the name of a dataset's index.
const IndexFile = "index.json"

// IndexVersion is the version of the index format.
const IndexVersion = 1

// IndexEntry is one episode of a dataset.
type IndexEntry struct {
	File        string `json:"file"` // bag name in the dataset folder
	Task        string `json:"task"`
	Family      string `json:"family"`
	Instruction string `json:"instruction"`
	Seed        uint64 `json:"seed"`
	Steps       int    `json:"steps"`
	Success     bool   `json:"success"`
	// Label is EpisodeInfo.Label: LabelExpert when the actions are the
	// noise-free expert's labels of a DAgger rollout (such an episode
	// teaches the expert's actions even when the rollout failed). Absent
	// in older indexes: the agent's own actions.
	Label string `json:"label,omitempty"`
	// Period is EpisodeInfo.Period, the seconds between frames (the
	// demonstrations' rate is its inverse). Absent (0) in older indexes.
	Period float64 `json:"period,omitempty"`
}

// Index lists a dataset's episodes. Height and Width are the frames' size,
// the same for every episode; Agent says what recorded them ("expert
// noise=... ", "policy:FILE").
type Index struct {
	Version  int          `json:"version"`
	Height   int          `json:"height"`
	Width    int          `json:"width"`
	Agent    string       `json:"agent,omitempty"`
	Episodes []IndexEntry `json:"episodes"`
}

// EpisodeFile is the bag name of task's episode with the given seed, for
// example "pick-000001.bag".
func EpisodeFile(task string, seed uint64) string { return fmt.Sprintf("%s-%06d.bag", task, seed) }

// IndexEntryFor describes a recorded episode.
func IndexEntryFor(file string, info EpisodeInfo) IndexEntry {
	return IndexEntry{File: file, Task: info.Task, Family: info.Family, Instruction: info.Instruction, Seed: info.Seed, Steps: info.Steps, Success: info.Success, Label: info.Label, Period: info.Period}
}

// Find returns the position of the entry for file, or -1.
func (ix *Index) Find(file string) int {
	for i, e := range ix.Episodes {
		if e.File == file {
			return i
		}
	}
	return -1
}

// Validate reports the first problem of the index.
func (ix *Index) Validate() error {
	switch {
	case ix.Version != IndexVersion:
		return fmt.Errorf("index version %d (this program reads %d)", ix.Version, IndexVersion)
	case ix.Height < 8 || ix.Width < 8 || ix.Height > MaxImageSide || ix.Width > MaxImageSide:
		return fmt.Errorf("index image size %dx%d: each side must be in [8, %d]", ix.Height, ix.Width, MaxImageSide)
	}
	seen := make(map[string]bool, len(ix.Episodes))
	for i, e := range ix.Episodes {
		switch {
		case e.File == "" || e.File != filepath.Base(e.File) || strings.ContainsAny(e.File, `/\`) || !strings.HasSuffix(e.File, ".bag"):
			return fmt.Errorf("index episode %d: file %q is not a bag name in the dataset folder", i, e.File)
		case seen[e.File]:
			return fmt.Errorf("index episode %d: %s is listed twice", i, e.File)
		case e.Task == "" || e.Steps < 0:
			return fmt.Errorf("index episode %d (%s): no task, or %d steps", i, e.File, e.Steps)
		case !(e.Period >= 0 && e.Period < 3600):
			return fmt.Errorf("index episode %d (%s): period %v s", i, e.File, e.Period)
		}
		seen[e.File] = true
	}
	return nil
}

// ReadIndex reads and validates dir's index. A missing index is an error
// wrapping os.ErrNotExist.
func ReadIndex(dir string) (*Index, error) {
	path := filepath.Join(dir, IndexFile)
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("sim: dataset index: %w", err)
	}
	var ix Index
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&ix); err != nil {
		return nil, fmt.Errorf("sim: dataset index %s: %w", path, err)
	}
	if err := ix.Validate(); err != nil {
		return nil, fmt.Errorf("sim: dataset index %s: %w", path, err)
	}
	return &ix, nil
}

// WriteIndex validates ix and writes it to dir atomically: a temporary
// file, synced, renamed over index.json, then the directory synced. A
// reader sees the old index or the new one, never a mix.
func WriteIndex(dir string, ix *Index) error {
	if err := ix.Validate(); err != nil {
		return fmt.Errorf("sim: write dataset index: %w", err)
	}
	b, err := json.MarshalIndent(ix, "", "  ")
	if err != nil {
		return fmt.Errorf("sim: write dataset index: %w", err)
	}
	f, err := os.CreateTemp(dir, IndexFile+".tmp*")
	if err != nil {
		return fmt.Errorf("sim: write dataset index: %w", err)
	}
	_, err = f.Write(append(b, '\n'))
	if err == nil {
		err = f.Sync()
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = os.Rename(f.Name(), filepath.Join(dir, IndexFile))
	}
	if err != nil {
		os.Remove(f.Name())
		return fmt.Errorf("sim: write dataset index in %s: %w", dir, err)
	}
	d, err := os.Open(dir)
	if err != nil {
		return fmt.Errorf("sim: write dataset index: %w", err)
	}
	defer d.Close()
	if err := d.Sync(); err != nil && !errors.Is(err, os.ErrInvalid) {
		return fmt.Errorf("sim: sync %s: %w", dir, err)
	}
	return nil
}
