package ros

import (
	"bytes"
	"context"
	"io"
	"math"
	"net/http"
	"net/http/httptest"
	"reflect"
	"strings"
	"testing"
	"time"
)

func response(value string) string {
	return `<?xml version='1.0'?>
<methodResponse>
<params>
<param>
` + value + `
</param>
</params>
</methodResponse>
`
}

// Responses written the way Python's xmlrpc.server (rosmaster) writes them.
func TestDecodeXMLRPCResponse(t *testing.T) {
	for _, tc := range []struct {
		name, value string
		want        any
	}{
		{"getPid", `<value><array><data>
<value><int>1</int></value>
<value><string></string></value>
<value><int>4242</int></value>
</data></array></value>`, []any{1, "", 4242}},
		{"untyped string", `<value>plain &amp; simple</value>`, "plain & simple"},
		{"empty untyped", `<value></value>`, ""},
		{"empty string element", `<value><string/></value>`, ""},
		{"i4 and whitespace", `<value><i4> -7 </i4></value>`, -7},
		{"double", `<value><double>7.5</double></value>`, 7.5},
		{"boolean", `<value><boolean>1</boolean></value>`, true},
		{"base64", `<value><base64>aGVs
bG8=</base64></value>`, []byte("hello")},
		{"dateTime", `<value><dateTime.iso8601>20011214T00:00:00</dateTime.iso8601></value>`, "20011214T00:00:00"},
		{"nil", `<value><nil/></value>`, nil},
		{"empty array", `<value><array><data></data></array></value>`, []any{}},
		{"param tree", `<value><struct>
<member><name>rate</name><value><double>7.5</double></value></member>
<member><name>gains</name><value><array><data><value><int>1</int></value><value><double>2.5</double></value></data></array></value></member>
<member><name>sub</name><value><struct><member><name>on</name><value><boolean>0</boolean></value></member></struct></value></member>
</struct></value>`, map[string]any{"rate": 7.5, "gains": []any{1, 2.5}, "sub": map[string]any{"on": false}}},
	} {
		got, err := decodeXMLRPCResponse(strings.NewReader(response(tc.value)))
		if err != nil || !reflect.DeepEqual(got, tc.want) {
			t.Errorf("%s: got %#v, %v; want %#v", tc.name, got, err, tc.want)
		}
	}
}

func TestDecodeXMLRPCErrors(t *testing.T) {
	for _, tc := range []struct{ doc, wantErr string }{
		{`<?xml version='1.0'?><methodResponse><fault><value><struct>
<member><name>faultCode</name><value><int>1</int></value></member>
<member><name>faultString</name><value><string>&lt;class 'TypeError'&gt;:bad</string></value></member>
</struct></value></fault></methodResponse>`, "xml-rpc fault 1: <class 'TypeError'>:bad"},
		{``, "unexpected end"},
		{`<methodResponse>`, "unexpected EOF"},
		{`<html>nope</html>`, "want <methodResponse>"},
		{response(`<value><int>x</int></value>`), "not an integer"},
		{response(`<value><boolean>2</boolean></value>`), "not 0 or 1"},
		{response(`<value><double>fast</double></value>`), "not a number"},
		{response(`<value><base64>!!</base64></value>`), "base64"},
		{response(`<value><float>1</float></value>`), "unknown value type <float>"},
		{response(`<value><array><data><int>1</int></data></array></value>`), "want <value> in <data>"},
		{response(`<value><struct><name>a</name></struct></value>`), "want <member>"},
		{response(`<value><string>a<b/></string></value>`), "want text in <string>"},
		{response(`<value>x<int>1</int></value>`), "text before <int>"},
		{response(strings.Repeat(`<value><array><data>`, 70) + strings.Repeat(`</data></array></value>`, 70)), "nested deeper"},
	} {
		_, err := decodeXMLRPCResponse(strings.NewReader(tc.doc))
		if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
			t.Errorf("decode %.40q: %v, want error containing %q", tc.doc, err, tc.wantErr)
		}
	}
}

// encodeParam writes a value in a response so the decoder can read it back.
func encodeParam(v any) (string, error) {
	var b bytes.Buffer
	if err := encodeXMLRPC(&b, v, 0); err != nil {
		return "", err
	}
	return response(b.String()), nil
}

func TestEncodeDecodeRoundTrip(t *testing.T) {
	for _, tc := range []struct{ in, want any }{
		{"a < b & c > d", "a < b & c > d"},
		{"", ""},
		{42, 42},
		{int64(-5), -5},
		{int32(9), 9},
		{true, true},
		{2.5, 2.5},
		{float32(0.25), 0.25},
		{1e300, 1e300},
		{math.Inf(-1), math.Inf(-1)},
		{[]byte{0, 1, 255}, []byte{0, 1, 255}},
		{[]string{"x", "y"}, []any{"x", "y"}},
		{[]float64{1, -2.5}, []any{1.0, -2.5}},
		{[]int{3}, []any{3}},
		{[]bool{true, false}, []any{true, false}},
		{map[string]any{"k<": []any{1, "two", map[string]any{}}}, map[string]any{"k<": []any{1, "two", map[string]any{}}}},
	} {
		doc, err := encodeParam(tc.in)
		if err != nil {
			t.Errorf("encode %#v: %v", tc.in, err)
			continue
		}
		got, err := decodeXMLRPCResponse(strings.NewReader(doc))
		if err != nil || !reflect.DeepEqual(got, tc.want) {
			t.Errorf("round trip %#v = %#v, %v; want %#v", tc.in, got, err, tc.want)
		}
	}
	doc, _ := encodeParam(math.NaN())
	if got, err := decodeXMLRPCResponse(strings.NewReader(doc)); err != nil || !math.IsNaN(got.(float64)) {
		t.Errorf("round trip NaN = %v, %v", got, err)
	}
}

func TestEncodeXMLRPCErrors(t *testing.T) {
	for _, tc := range []struct {
		in      any
		wantErr string
	}{
		{nil, "no null"},
		{math.MaxInt32 + 1, "32-bit"},
		{int64(math.MinInt32 - 1), "32-bit"},
		{struct{}{}, "cannot encode a struct {}"},
		{[]any{1, nil}, "element 1"},
		{map[string]any{"k": uint8(1)}, `key "k"`},
	} {
		if _, err := encodeParam(tc.in); err == nil || !strings.Contains(err.Error(), tc.wantErr) {
			t.Errorf("encode %#v: %v, want error containing %q", tc.in, err, tc.wantErr)
		}
	}
}

// An XML-RPC server over HTTP answering like rosmaster, to test call's
// framing and error paths (the real master is exercised by the integration
// tests).
func TestRPCClientCall(t *testing.T) {
	var gotBody string
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		gotBody = string(b)
		switch {
		case strings.Contains(gotBody, "<methodName>getPid<"):
			io.WriteString(w, response(`<value><array><data><value><int>1</int></value><value><string></string></value><value><int>99</int></value></data></array></value>`))
		case strings.Contains(gotBody, "<methodName>getParam<"):
			io.WriteString(w, response(`<value><array><data><value><int>-1</int></value><value><string>Parameter [/x] is not set</string></value><value><int>0</int></value></data></array></value>`))
		case strings.Contains(gotBody, "<methodName>lookupNode<"):
			io.WriteString(w, response(`<value><array><data><value><int>0</int></value><value><string>boom</string></value><value><int>0</int></value></data></array></value>`))
		case strings.Contains(gotBody, "<methodName>weird<"):
			io.WriteString(w, response(`<value><int>1</int></value>`))
		default:
			http.Error(w, "no", http.StatusNotFound)
		}
	}))
	defer srv.Close()
	c := newRPCClient(srv.URL, "/caller&co", time.Second)
	ctx := context.Background()

	pid, err := c.getPid(ctx)
	if err != nil || pid != 99 {
		t.Fatalf("getPid = %d, %v; want 99", pid, err)
	}
	if !strings.Contains(gotBody, "<string>/caller&amp;co</string>") {
		t.Errorf("request body %q does not carry the escaped caller id", gotBody)
	}
	if v, found, err := c.getParam(ctx, "/x"); err != nil || found || v != nil {
		t.Errorf("getParam of an unset key = %v, %v, %v; want not found", v, found, err)
	}
	if _, _, err := c.lookupNode(ctx, "/n"); err == nil || !strings.Contains(err.Error(), "lookupNode: code 0: boom") {
		t.Errorf("lookupNode error = %v, want the master's code and message", err)
	}
	if _, err := c.call(ctx, "weird"); err == nil || !strings.Contains(err.Error(), "not [code, status, value]") {
		t.Errorf("call with a bare int answer = %v", err)
	}
	if _, err := c.call(ctx, "missing"); err == nil || !strings.Contains(err.Error(), "404") {
		t.Errorf("call on HTTP 404 = %v", err)
	}
	if err := c.setParam(ctx, "/x", nil); err == nil || !strings.Contains(err.Error(), "argument 2") {
		t.Errorf("setParam(nil) = %v, want an encoding error naming the argument", err)
	}
	dead := newRPCClient("http://127.0.0.1:1/", "/c", time.Second)
	if _, err := dead.getPid(ctx); err == nil || !strings.Contains(err.Error(), "http://127.0.0.1:1/") {
		t.Errorf("getPid on a closed port = %v, want an error naming the URI", err)
	}
}

// FuzzDecodeXMLRPCResponse checks that the decoder never panics and that
// whatever it decodes survives an encode/decode round trip.
func FuzzDecodeXMLRPCResponse(f *testing.F) {
	for _, v := range []string{
		`<value><array><data><value><int>1</int></value><value><string>x</string></value><value><int>7</int></value></data></array></value>`,
		`<value><struct><member><name>a</name><value><double>1.5</double></value></member></struct></value>`,
		`<value>text</value>`, `<value><base64>aGk=</base64></value>`, `<value><nil/></value>`,
		`<value><boolean>0</boolean></value>`, `<value><i8>123456789012</i8></value>`,
	} {
		f.Add(response(v))
	}
	f.Add(`<methodResponse><fault><value><struct></struct></value></fault></methodResponse>`)
	f.Add(`<?xml version="1.0"?><!-- c --><methodResponse><params><param><value><array><data/></array></value></param></params></methodResponse>`)
	f.Fuzz(func(t *testing.T, doc string) {
		v, err := decodeXMLRPCResponse(strings.NewReader(doc))
		if err != nil {
			return
		}
		again, err := encodeParam(v)
		if err != nil {
			return // nil, or an integer beyond 32 bits: not encodable, by design
		}
		w, err := decodeXMLRPCResponse(strings.NewReader(again))
		if err != nil {
			t.Fatalf("re-decoding %q: %v", again, err)
		}
		if !equalNaN(v, w) {
			t.Fatalf("round trip changed %#v into %#v", v, w)
		}
	})
}

// equalNaN is reflect.DeepEqual with NaN equal to NaN.
func equalNaN(a, b any) bool {
	switch x := a.(type) {
	case float64:
		y, ok := b.(float64)
		return ok && (x == y || math.IsNaN(x) && math.IsNaN(y))
	case []any:
		y, ok := b.([]any)
		if !ok || len(x) != len(y) {
			return false
		}
		for i := range x {
			if !equalNaN(x[i], y[i]) {
				return false
			}
		}
		return true
	case map[string]any:
		y, ok := b.(map[string]any)
		if !ok || len(x) != len(y) {
			return false
		}
		for k := range x {
			if !equalNaN(x[k], y[k]) {
				return false
			}
		}
		return true
	default:
		return reflect.DeepEqual(a, b)
	}
}
