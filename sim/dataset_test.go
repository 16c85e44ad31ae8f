package sim

import (
	"errors"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
)

func TestIndexRoundTrip(t *testing.T) {
	dir := t.TempDir()
	if _, err := ReadIndex(dir); !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("missing index: %v, want os.ErrNotExist", err)
	}
	info := EpisodeInfo{Task: "cue_pick", Family: "memory", Instruction: "grab the highlighted object", Seed: 12, Steps: 31, Success: true}
	ix := &Index{Version: IndexVersion, Height: 64, Width: 80, Agent: "expert",
		Episodes: []IndexEntry{IndexEntryFor(EpisodeFile("cue_pick", 12), info), {File: "pick-000001.bag", Task: "pick", Family: "pick", Steps: 20}}}
	if ix.Episodes[0].File != "cue_pick-000012.bag" {
		t.Errorf("file name %s", ix.Episodes[0].File)
	}
	if err := WriteIndex(dir, ix); err != nil {
		t.Fatal(err)
	}
	got, err := ReadIndex(dir)
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(got, ix) {
		t.Errorf("read %+v, wrote %+v", got, ix)
	}
	if got.Find("pick-000001.bag") != 1 || got.Find("nothing.bag") != -1 {
		t.Error("Find")
	}
	// Rewriting leaves only the index: no temporary files.
	ix.Episodes = ix.Episodes[:1]
	if err := WriteIndex(dir, ix); err != nil {
		t.Fatal(err)
	}
	if files, _ := filepath.Glob(filepath.Join(dir, "*")); len(files) != 1 || filepath.Base(files[0]) != IndexFile {
		t.Errorf("dataset folder holds %v", files)
	}
}

func TestIndexRejects(t *testing.T) {
	good := func() *Index {
		return &Index{Version: 1, Height: 64, Width: 80, Episodes: []IndexEntry{{File: "a.bag", Task: "pick", Steps: 3}}}
	}
	for _, tc := range []struct {
		name string
		edit func(ix *Index)
		err  string
	}{
		{"version", func(ix *Index) { ix.Version = 2 }, "index version 2"},
		{"size", func(ix *Index) { ix.Height = 0 }, "image size 0x80"},
		{"path", func(ix *Index) { ix.Episodes[0].File = "../a.bag" }, "not a bag name"},
		{"not a bag", func(ix *Index) { ix.Episodes[0].File = "a.txt" }, "not a bag name"},
		{"twice", func(ix *Index) { ix.Episodes = append(ix.Episodes, ix.Episodes[0]) }, "listed twice"},
		{"no task", func(ix *Index) { ix.Episodes[0].Task = "" }, "no task"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ix := good()
			tc.edit(ix)
			dir := t.TempDir()
			if err := WriteIndex(dir, ix); err == nil || !strings.Contains(err.Error(), tc.err) {
				t.Errorf("WriteIndex: %v, want %q", err, tc.err)
			}
			if _, err := os.Stat(filepath.Join(dir, IndexFile)); !errors.Is(err, os.ErrNotExist) {
				t.Error("a refused index was written")
			}
		})
	}
	dir := t.TempDir()
	for _, tc := range []struct{ name, text, err string }{
		{"not JSON", "{", "unexpected EOF"},
		{"unknown field", `{"version":1,"height":8,"width":8,"episodes":[],"extra":1}`, "unknown field"},
		{"invalid", `{"version":1,"height":8,"width":8,"episodes":[{"file":"x"}]}`, "not a bag name"},
	} {
		os.WriteFile(filepath.Join(dir, IndexFile), []byte(tc.text), 0o644)
		if _, err := ReadIndex(dir); err == nil || !strings.Contains(err.Error(), tc.err) {
			t.Errorf("%s: %v, want %q", tc.name, err, tc.err)
		}
	}
}
