package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/ttmrobot/ttm/policy"
)

// TestTrainModelThenEval trains a small policy on another sequence model
// than the TTM for two updates, checks that the model is named in the JSON
// log and the checkpoint, and evaluates the checkpoint closed loop for one
// episode with ttm eval, which needs nothing model-specific.
func TestTrainModelThenEval(t *testing.T) {
	data, out := t.TempDir(), t.TempDir()
	recordTinyDataset(t, data, 1)
	ckpt := filepath.Join(out, "rec.safetensors")
	code, _, stderr := runCmd(t, "train", "--data", data, "--preset", "small", "--model", "recurrent", "--out", ckpt,
		"--steps", "2", "--batch", "1", "--window", "2", "--workers", "1", "--log-every", "1", "--checkpoint-every", "2")
	if code != 0 {
		t.Fatalf("train --model recurrent: exit %d: %s", code, stderr)
	}
	if !strings.Contains(stderr, "model=recurrent") {
		t.Errorf("train log does not name the model:\n%s", stderr)
	}
	var lg trainLog
	b, _ := os.ReadFile(newTrainFiles(ckpt).log)
	if err := json.Unmarshal(b, &lg); err != nil {
		t.Fatalf("JSON log: %v", err)
	}
	if lg.Model != "recurrent" || len(lg.History) != 2 {
		t.Errorf("JSON log: model %q, %d records; want recurrent, 2", lg.Model, len(lg.History))
	}
	p, err := policy.Load(ckpt, policy.Options{NoBackbone: true})
	if err != nil {
		t.Fatal(err)
	}
	if p.ModelName() != "recurrent" || p.Groups()[0].Name != "seq" {
		t.Errorf("checkpoint runs %q (first group %q), want recurrent", p.ModelName(), p.Groups()[0].Name)
	}

	// Resuming with another --model is refused; with the same one it extends the run.
	code, _, stderr = runCmd(t, "train", "--data", data, "--model", "lstm", "--out", ckpt, "--steps", "3", "--batch", "1", "--window", "2")
	if code != 2 || !strings.Contains(stderr, "runs the sequence model recurrent") {
		t.Errorf("resume with --model lstm: exit %d: %s", code, stderr)
	}

	code, _, stderr = runCmd(t, "train", "--data", data, "--model", "recurrent", "--out", ckpt, "--steps", "3", "--batch", "1",
		"--window", "2", "--workers", "1", "--log-every", "1", "--checkpoint-every", "2")
	if code != 0 || !strings.Contains(stderr, "resumed") {
		t.Fatalf("resume with --model recurrent: exit %d: %s", code, stderr)
	}
	b, _ = os.ReadFile(newTrainFiles(ckpt).log)
	if err := json.Unmarshal(b, &lg); err != nil || lg.Model != "recurrent" || len(lg.History) != 3 {
		t.Errorf("after resuming: model %q, %d records (err %v); want recurrent, 3", lg.Model, len(lg.History), err)
	}

	ev := filepath.Join(out, "eval")
	code, _, stderr = runCmd(t, "eval", "--policy", ckpt, "--tasks", "pick", "--episodes", "1", "--size", "128x160",
		"--workers", "1", "--out", ev)
	if code != 0 {
		t.Fatalf("eval of the recurrent checkpoint: exit %d: %s", code, stderr)
	}
	_, l := ledgerOf(t, ev)
	if len(l.Runs) != 1 || l.PerFamily["pick"].Episodes != 1 {
		t.Errorf("ledger: %+v, want one run of one pick episode", l)
	}
}

func TestTrainModelUsageErrors(t *testing.T) {
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"--model", "gru"}, `--model "gru": unknown sequence model (have ttm, ttm-nomem, erase-add, concat, window, causal, recurrent, lstm)`},
		{[]string{"--model", "window", "--no-memory"}, "ttm-nomem"},
	} {
		args := append([]string{"train", "--data", "d", "--out", filepath.Join(t.TempDir(), "x.safetensors")}, tc.args...)
		if code, _, stderr := runCmd(t, args...); code != 2 || !strings.Contains(stderr, tc.want) {
			t.Errorf("%v: exit %d, want 2 and %q in:\n%s", tc.args, code, tc.want, stderr)
		}
	}
}

// The small-memory-film preset's instruction encoder hashes runs of
// words, so its checkpoint tells "move A near B" from "move B near A".
func TestTrainWordNGrams(t *testing.T) {
	data, out := t.TempDir(), t.TempDir()
	recordTinyDataset(t, data, 1)
	ckpt := filepath.Join(out, "grams.safetensors")
	args := []string{"train", "--data", data, "--preset", "small-memory-film", "--out", ckpt, "--batch", "1", "--window", "2", "--workers", "1", "--steps", "1"}
	if code, _, stderr := runCmd(t, args...); code != 0 {
		t.Fatalf("train --preset small-memory-film: exit %d: %s", code, stderr)
	}
	p, err := policy.Load(ckpt, policy.Options{NoBackbone: true})
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close()
	lang := p.Spec().Language
	if lang.WordNGrams != 3 {
		t.Fatalf("the checkpoint's word_ngrams is %d, want 3", lang.WordNGrams)
	}
	rows := func(instruction string) []int32 {
		tok, err := p.Tokenize(instruction)
		if err != nil {
			t.Fatal(err)
		}
		var r []int32
		for _, piece := range tok.Pieces {
			r = append(r, piece.Row)
		}
		slices.Sort(r)
		return r
	}
	if slices.Equal(rows("move the apple near the sponge"), rows("move the sponge near the apple")) {
		t.Error("with word 3-grams, the two orders of a move instruction have the same pieces")
	}
}
