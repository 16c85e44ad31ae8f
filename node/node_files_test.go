package node

import (
	"context"
	"math"
	"net"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/ttmrobot/ttm/internal/ros"
	"github.com/ttmrobot/ttm/internal/rostest"
)

// unusedMasterURI is a master URI nothing listens on.
func unusedMasterURI(t *testing.T) string {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	uri := "http://" + l.Addr().String()
	l.Close()
	return uri
}

// damagedFiles writes a copy of the small checkpoint and its backbone into
// a folder of its own, lets damage change them, and returns the
// checkpoint's path and the backbone's.
func damagedFiles(t *testing.T, damage func(t *testing.T, ckpt, backbone string)) (string, string) {
	t.Helper()
	src := smallPath(t)
	dir := t.TempDir()
	ckpt := filepath.Join(dir, filepath.Base(src))
	backbone := filepath.Join(dir, strings.TrimSuffix(filepath.Base(src), ".safetensors")+".backbone.onnx")
	for from, to := range map[string]string{src: ckpt, filepath.Join(filepath.Dir(src), filepath.Base(backbone)): backbone} {
		b, err := os.ReadFile(from)
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(to, b, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	damage(t, ckpt, backbone)
	return ckpt, backbone
}

// truncate keeps the first half of the file at path.
func truncate(t *testing.T, path string) {
	t.Helper()
	st, err := os.Stat(path)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.Truncate(path, st.Size()/2); err != nil {
		t.Fatal(err)
	}
}

// flipByte inverts one byte at offset off of the file at path.
func flipByte(t *testing.T, path string, off int) {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	b[off] ^= 0xff
	if err := os.WriteFile(path, b, 0o644); err != nil {
		t.Fatal(err)
	}
}

// TestStartChecksFilesFirst starts the node on a missing, truncated or
// corrupt checkpoint or backbone, or a checkpoint path naming /dev/zero, with no master running and with one: it
// fails within a second, naming the file and what is wrong with it,
// instead of waiting for the master first.
func TestStartChecksFilesFirst(t *testing.T) {
	master := rostest.StartMaster(t)
	cases := []struct {
		name   string
		damage func(t *testing.T, ckpt, backbone string)
		file   string // "checkpoint" or "backbone": the file the error names
		want   string // the problem it states
	}{
		{"missing checkpoint", func(t *testing.T, ckpt, _ string) { os.Remove(ckpt) }, "checkpoint", "no such file or directory"},
		{"truncated checkpoint", func(t *testing.T, ckpt, _ string) { truncate(t, ckpt) }, "checkpoint", "(truncated?)"},
		{"corrupt checkpoint header", func(t *testing.T, ckpt, _ string) { flipByte(t, ckpt, 7) }, "checkpoint", "exceeds the limit"},
		{"corrupt checkpoint tensor", func(t *testing.T, ckpt, _ string) {
			editTensor(t, ckpt, "policy/head/bias", func(v []float32) { v[0] = float32(math.NaN()) })
		}, "checkpoint", "policy/head/bias holds NaN"},
		{"checkpoint weight with a flipped bit", func(t *testing.T, ckpt, _ string) {
			editTensor(t, ckpt, "policy/head/kernel", func(v []float32) {
				i := slices.IndexFunc(v, func(w float32) bool { return math.Abs(float64(w)) > 1e-3 })
				v[i] = math.Float32frombits(math.Float32bits(v[i]) ^ 1<<30) // the exponent's top bit: over 1e35
			})
		}, "checkpoint", "policy/head/kernel holds"},
		{"checkpoint weight bit flipped in place", func(t *testing.T, ckpt, _ string) {
			st, err := os.Stat(ckpt)
			if err != nil {
				t.Fatal(err)
			}
			flipByte(t, ckpt, int(st.Size())-100) // in the last tensor's data
		}, "checkpoint", "the header says"},
		{"checkpoint is a device", func(t *testing.T, ckpt, _ string) {
			if err := os.Remove(ckpt); err != nil {
				t.Fatal(err)
			}
			if err := os.Symlink("/dev/zero", ckpt); err != nil {
				t.Fatal(err)
			}
		}, "checkpoint", "not a regular file"},
		{"missing backbone", func(t *testing.T, _, backbone string) { os.Remove(backbone) }, "backbone", "no such file or directory"},
		{"truncated backbone", func(t *testing.T, _, backbone string) { truncate(t, backbone) }, "backbone", "SHA-256"},
		{"corrupt backbone", func(t *testing.T, _, backbone string) { flipByte(t, backbone, 1000) }, "backbone", "SHA-256"},
	}
	for _, m := range []struct{ name, uri string }{{"no master", unusedMasterURI(t)}, {"master", master.URI}} {
		for _, tc := range cases {
			t.Run(m.name+"/"+tc.name, func(t *testing.T) {
				ckpt, backbone := damagedFiles(t, tc.damage)
				args, err := ros.ParseArgs("ttm_files", nil, func(k string) (string, bool) {
					if k == "ROS_MASTER_URI" {
						return m.uri, true
					}
					return "", false
				})
				if err != nil {
					t.Fatal(err)
				}
				ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
				defer cancel()
				began := time.Now()
				n, err := Start(ctx, Config{Args: args, Policy: ckpt, Threads: 1})
				took := time.Since(began)
				if err == nil {
					n.Close()
					t.Fatal("the node started")
				}
				file := map[string]string{"checkpoint": ckpt, "backbone": backbone}[tc.file]
				if msg := err.Error(); !strings.Contains(msg, file) || !strings.Contains(msg, tc.want) {
					t.Errorf("error %q: want the %s %s and %q", msg, tc.file, file, tc.want)
				}
				if took > time.Second {
					t.Errorf("failed after %v, want within a second", took.Round(time.Millisecond))
				}
			})
		}
	}
}
