package ros_test

import (
	"fmt"

	"github.com/ttmrobot/ttm/internal/ros"
)

func ExampleResolver() {
	r, err := ros.NewResolver("/ns/node", []ros.Remap{{From: "image", To: "/cam/image"}})
	if err != nil {
		fmt.Println(err)
		return
	}
	for _, name := range []string{"a", "~a", "/a", "image", "/ns/image", ""} {
		resolved, _ := r.Resolve(name)
		fmt.Printf("%q -> %s\n", name, resolved)
	}
	_, err = r.Resolve("a//b")
	fmt.Println(err)
	// Output:
	// "a" -> /ns/a
	// "~a" -> /ns/node/a
	// "/a" -> /a
	// "image" -> /cam/image
	// "/ns/image" -> /cam/image
	// "" -> /ns
	// name "a//b": "//" at offset 1 is not allowed
}
