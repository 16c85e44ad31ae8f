package rosbag_test

import (
	"fmt"
	"os"
	"path/filepath"
	"time"

	"github.com/ttmrobot/ttm/internal/rosbag"
)

// Write a bag atomically, then read it back in time order.
func Example() {
	dir, _ := os.MkdirTemp("", "bag")
	defer os.RemoveAll(dir)
	path := filepath.Join(dir, "episode.bag")

	w, err := rosbag.Create(path, rosbag.WriterOptions{}) // writes episode.bag.active
	if err != nil {
		panic(err)
	}
	t0, _ := rosbag.FromTime(time.Date(2024, 5, 1, 12, 0, 0, 0, time.UTC))
	t1, _ := rosbag.FromTime(time.Date(2024, 5, 1, 12, 0, 1, 0, time.UTC))
	w.Write("/action", t1, &rosbag.Float32MultiArray{Data: []float32{1, 0.5}})
	w.Write("/instruction", t0, &rosbag.String{Data: "open the top drawer"})
	if err := w.Close(); err != nil { // renames it to episode.bag
		panic(err)
	}

	r, err := rosbag.Open(path)
	if err != nil {
		panic(err)
	}
	defer r.Close()
	for rec, err := range r.Messages() {
		if err != nil {
			panic(err)
		}
		switch rec.Conn.Type {
		case rosbag.StringType.Name:
			var m rosbag.String
			rec.Decode(&m)
			fmt.Println(rec.Time.Time().Format(time.TimeOnly), rec.Conn.Topic, m.Data)
		case rosbag.Float32MultiArrayType.Name:
			var m rosbag.Float32MultiArray
			rec.Decode(&m)
			fmt.Println(rec.Time.Time().Format(time.TimeOnly), rec.Conn.Topic, m.Data)
		}
	}
	// Output:
	// 12:00:00 /instruction open the top drawer
	// 12:00:01 /action [1 0.5]
}
