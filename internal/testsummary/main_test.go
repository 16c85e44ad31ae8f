package main

import (
	"slices"
	"strings"
	"testing"
)

func TestSummarise(t *testing.T) {
	for _, tc := range []struct {
		name      string
		in        []string
		wantOut   string
		wantSkips []skipped
	}{
		{"passing package", []string{
			`{"Action":"run","Package":"p","Test":"TestA"}`,
			`{"Action":"output","Package":"p","Test":"TestA","Output":"=== RUN   TestA\n"}`,
			`{"Action":"output","Package":"p","Test":"TestA","Output":"    a_test.go:3: noise\n"}`,
			`{"Action":"output","Package":"p","Test":"TestA","Output":"--- PASS: TestA (0.00s)\n"}`,
			`{"Action":"pass","Package":"p","Test":"TestA"}`,
			`{"Action":"output","Package":"p","Output":"PASS\n"}`,
			`{"Action":"output","Package":"p","Output":"ok  \tp\t0.01s\n"}`,
			`{"Action":"pass","Package":"p"}`,
		}, "ok  \tp\t0.01s\n", nil},
		{"a failure and a skip", []string{
			`{"Action":"output","Package":"p","Test":"TestF","Output":"=== RUN   TestF\n"}`,
			`{"Action":"output","Package":"p","Test":"TestF","Output":"    f_test.go:5: boom\n"}`,
			`{"Action":"output","Package":"p","Test":"TestF","Output":"--- FAIL: TestF (0.00s)\n"}`,
			`{"Action":"fail","Package":"p","Test":"TestF"}`,
			`{"Action":"output","Package":"p","Test":"TestS/sub","Output":"=== RUN   TestS/sub\n"}`,
			`{"Action":"output","Package":"p","Test":"TestS/sub","Output":"    s_test.go:9: needs a robot\n"}`,
			`{"Action":"output","Package":"p","Test":"TestS/sub","Output":"--- SKIP: TestS/sub (0.00s)\n"}`,
			`{"Action":"skip","Package":"p","Test":"TestS/sub"}`,
			`{"Action":"output","Package":"p","Output":"FAIL\n"}`,
			`{"Action":"output","Package":"p","Output":"FAIL\tp\t0.02s\n"}`,
			`{"Action":"fail","Package":"p"}`,
		}, "    f_test.go:5: boom\n--- FAIL: TestF (0.00s)\nFAIL\nFAIL\tp\t0.02s\n",
			[]skipped{{"p", "TestS/sub", "s_test.go:9: needs a robot"}}},
		{"build error", []string{
			`{"ImportPath":"p [p.test]","Action":"build-output","Output":"# p\n"}`,
			`{"ImportPath":"p [p.test]","Action":"build-output","Output":"p.go:2:12: undefined: x\n"}`,
			`not json`,
			`{"Action":"output","Package":"p","Output":"FAIL\tp [build failed]\n"}`,
		}, "# p\np.go:2:12: undefined: x\nnot json\nFAIL\tp [build failed]\n", nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var out strings.Builder
			skips, err := summarise(&out, strings.NewReader(strings.Join(tc.in, "\n")+"\n"))
			if err != nil {
				t.Fatal(err)
			}
			if out.String() != tc.wantOut {
				t.Errorf("output\n%q\nwant\n%q", out.String(), tc.wantOut)
			}
			if !slices.Equal(skips, tc.wantSkips) {
				t.Errorf("skipped %+v, want %+v", skips, tc.wantSkips)
			}
		})
	}
}
