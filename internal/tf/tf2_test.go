package tf

import (
	"bytes"
	"encoding/json"
	"math/rand/v2"
	"os/exec"
	"strings"
	"testing"
	"time"
)

// tf2Script reads edges and queries as JSON on stdin, stores the edges in a
// tf2_py BufferCore (no ROS master needed) and prints each lookup as
// [tx, ty, tz, qx, qy, qz, qw].
const tf2Script = `
import json, sys
import rospy, tf2_py
from geometry_msgs.msg import TransformStamped
job = json.load(sys.stdin)
b = tf2_py.BufferCore(rospy.Duration(100))
for e in job["edges"]:
    m = TransformStamped()
    m.header.frame_id, m.child_frame_id = e["parent"], e["child"]
    m.header.stamp = rospy.Time(0, e["ns"])
    m.transform.translation.x, m.transform.translation.y, m.transform.translation.z = e["t"]
    m.transform.rotation.x, m.transform.rotation.y, m.transform.rotation.z, m.transform.rotation.w = e["q"]
    if e["static"]:
        b.set_transform_static(m, "test")
    else:
        b.set_transform(m, "test")
out = []
for q in job["queries"]:
    r = b.lookup_transform_core(q["target"], q["source"], rospy.Time(0, q["ns"])).transform
    out.append([r.translation.x, r.translation.y, r.translation.z, r.rotation.x, r.rotation.y, r.rotation.z, r.rotation.w])
json.dump(out, sys.stdout)
`

type tf2Edge struct {
	Parent string     `json:"parent"`
	Child  string     `json:"child"`
	NS     int64      `json:"ns"`
	T      [3]float64 `json:"t"`
	Q      [4]float64 `json:"q"`
	Static bool       `json:"static"`
}

type tf2Query struct {
	Target string `json:"target"`
	Source string `json:"source"`
	NS     int64  `json:"ns"`
}

// TestAgainstTF2 builds random trees, with static edges and dynamic edges
// sampled at jittered stamps, and compares Lookup with tf2's
// lookupTransform at times inside every edge's data.
func TestAgainstTF2(t *testing.T) {
	if err := exec.Command("/usr/bin/python3", "-c", "import tf2_py, rospy").Run(); err != nil {
		t.Skipf("tf2 is not available (/usr/bin/python3 -c 'import tf2_py, rospy': %v); install python3-tf2-ros to compare against it", err)
	}
	r := rand.New(rand.NewPCG(11, 12))
	var edges []tf2Edge
	var queries []tf2Query
	var bufs []*Buffer
	const trees, n = 5, 10
	for k := range trees {
		b := NewBuffer(BufferConf{History: 100 * time.Second})
		bufs = append(bufs, b)
		name := func(i int) string { return string(rune('a'+k)) + string(rune('0'+i)) }
		for i := 1; i < n; i++ {
			p, c := name(r.IntN(i)), name(i)
			if r.IntN(3) == 0 {
				x := randTransform(r)
				mustAdd(t, b, p, c, time.Time{}, x, true)
				edges = append(edges, tf2Edge{p, c, 0, x.Translation, x.Rotation, true})
				continue
			}
			for s := range 5 {
				x := randTransform(r)
				when := at(float64(s) + r.Float64()*0.5 - 0.25)
				mustAdd(t, b, p, c, when, x, false)
				edges = append(edges, tf2Edge{p, c, when.UnixNano(), x.Translation, x.Rotation, false})
			}
		}
		for range 40 {
			when := at(0.25 + r.Float64()*3.5)
			queries = append(queries, tf2Query{name(r.IntN(n)), name(r.IntN(n)), when.UnixNano()})
		}
	}
	job, err := json.Marshal(map[string]any{"edges": edges, "queries": queries})
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command("/usr/bin/python3", "-c", tf2Script)
	cmd.Stdin = bytes.NewReader(job)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("tf2: %v: %s", err, stderr.String())
	}
	var want [][7]float64
	if err := json.Unmarshal(out, &want); err != nil {
		t.Fatalf("tf2's answer: %v", err)
	}
	if len(want) != len(queries) {
		t.Fatalf("tf2 answered %d of %d queries", len(want), len(queries))
	}
	for i, q := range queries {
		b := bufs[strings.IndexByte("abcde", q.Target[0])]
		got, err := b.Lookup(q.Target, q.Source, time.Unix(0, q.NS), 0)
		if err != nil {
			t.Fatal(err)
		}
		w := Transform{Translation: [3]float64(want[i][:3]), Rotation: [4]float64(want[i][3:])}
		nearTransform(t, q.Target+"<-"+q.Source, got, w, 1e-9)
	}
}
