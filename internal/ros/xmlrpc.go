package ros

import (
	"bytes"
	"context"
	"encoding/base64"
	"encoding/xml"
	"errors"
	"fmt"
	"io"
	"math"
	"net"
	"net/http"
	"sort"
	"strconv"
	"strings"
	"time"
)

// A minimal XML-RPC client for the ROS master, parameter and slave APIs.
//
// goroslib's own client (pkg/xmlrpc) decodes into fixed Go types: it cannot
// read a parameter whose type is not known in advance, decodes no structs
// (dictionaries), and its errors do not name the parameter. The config helper
// needs all three, and the watchdog needs getPid, which goroslib's master
// client lacks. Every ROS API call answers [code, statusMessage, value].

// maxXMLRPCDepth bounds the nesting of arrays and structs in a response.
const maxXMLRPCDepth = 64

// maxXMLRPCResponse bounds the size of a response body (parameter trees are
// small; a misbehaving server must not exhaust memory).
const maxXMLRPCResponse = 64 << 20

// rpcClient calls one XML-RPC endpoint as callerID. Keep-alive is off, so a
// finished call leaves no idle connection (and no goroutine) behind.
type rpcClient struct {
	url      string
	callerID string
	http     *http.Client
}

// newRPCClient returns a client for the endpoint at uri (http://host:port/)
// whose calls time out after timeout.
func newRPCClient(uri, callerID string, timeout time.Duration) *rpcClient {
	return &rpcClient{
		url:      uri,
		callerID: callerID,
		http: &http.Client{
			Timeout: timeout,
			Transport: &http.Transport{
				Proxy:             nil, // the ROS graph is never reached through a proxy
				DialContext:       (&net.Dialer{Timeout: timeout}).DialContext,
				DisableKeepAlives: true,
			},
		},
	}
}

// rosError is a ROS API answer whose code is not 1.
type rosError struct {
	Method string
	Code   int
	Status string
}

func (e *rosError) Error() string {
	return fmt.Sprintf("%s: code %d: %s", e.Method, e.Code, e.Status)
}

// call invokes method(callerID, args...) and returns the value of a
// successful [1, status, value] answer.
func (c *rpcClient) call(ctx context.Context, method string, args ...any) (any, error) {
	var body bytes.Buffer
	body.WriteString(`<?xml version="1.0"?><methodCall><methodName>`)
	xmlEscape(&body, method)
	body.WriteString(`</methodName><params>`)
	for i, a := range append([]any{c.callerID}, args...) {
		body.WriteString(`<param>`)
		if err := encodeXMLRPC(&body, a, 0); err != nil {
			return nil, fmt.Errorf("%s: argument %d: %w", method, i, err)
		}
		body.WriteString(`</param>`)
	}
	body.WriteString(`</params></methodCall>`)

	req, err := http.NewRequestWithContext(ctx, http.MethodPost, c.url, &body)
	if err != nil {
		return nil, fmt.Errorf("%s %s: %w", method, c.url, err)
	}
	req.Header.Set("Content-Type", "text/xml")
	res, err := c.http.Do(req)
	if err != nil {
		return nil, fmt.Errorf("%s %s: %w", method, c.url, err)
	}
	defer res.Body.Close()
	if res.StatusCode != http.StatusOK {
		return nil, fmt.Errorf("%s %s: HTTP status %s", method, c.url, res.Status)
	}
	v, err := decodeXMLRPCResponse(io.LimitReader(res.Body, maxXMLRPCResponse))
	if err != nil {
		return nil, fmt.Errorf("%s %s: %w", method, c.url, err)
	}
	triple, ok := v.([]any)
	if !ok || len(triple) != 3 {
		return nil, fmt.Errorf("%s %s: answer is not [code, status, value]", method, c.url)
	}
	code, ok1 := triple[0].(int)
	status, ok2 := triple[1].(string)
	if !ok1 || !ok2 {
		return nil, fmt.Errorf("%s %s: answer is not [code, status, value]", method, c.url)
	}
	if code != 1 {
		return nil, &rosError{Method: method, Code: code, Status: status}
	}
	return triple[2], nil
}

// getPid returns the process id of the endpoint (master or node).
func (c *rpcClient) getPid(ctx context.Context) (int, error) {
	v, err := c.call(ctx, "getPid")
	if err != nil {
		return 0, err
	}
	pid, ok := v.(int)
	if !ok {
		return 0, fmt.Errorf("getPid: want an int, got %T", v)
	}
	return pid, nil
}

// lookupNode returns the slave API URI registered for a node; found is false
// when the master does not know the node.
func (c *rpcClient) lookupNode(ctx context.Context, name string) (uri string, found bool, err error) {
	v, err := c.call(ctx, "lookupNode", name)
	var re *rosError
	if errors.As(err, &re) && re.Code == -1 {
		return "", false, nil
	}
	if err != nil {
		return "", false, err
	}
	uri, ok := v.(string)
	if !ok {
		return "", false, fmt.Errorf("lookupNode: want a string, got %T", v)
	}
	return uri, true, nil
}

// getParam returns the value of a parameter; found is false when it is not
// set. A namespace key returns a map[string]any tree.
func (c *rpcClient) getParam(ctx context.Context, key string) (v any, found bool, err error) {
	v, err = c.call(ctx, "getParam", key)
	var re *rosError
	if errors.As(err, &re) && re.Code == -1 {
		return nil, false, nil
	}
	if err != nil {
		return nil, false, err
	}
	return v, true, nil
}

// setParam sets a parameter (any value encodeXMLRPC accepts).
func (c *rpcClient) setParam(ctx context.Context, key string, v any) error {
	_, err := c.call(ctx, "setParam", key, v)
	return err
}

// encodeXMLRPC writes <value>v</value>. Accepted: string, bool, int (32-bit
// range), int32, int64 (32-bit range), float64, float32, []byte (base64),
// []any, []string, []int, []float64, []bool, map[string]any.
func encodeXMLRPC(b *bytes.Buffer, v any, depth int) error {
	if depth > maxXMLRPCDepth {
		return fmt.Errorf("value nested deeper than %d", maxXMLRPCDepth)
	}
	b.WriteString(`<value>`)
	switch x := v.(type) {
	case string:
		b.WriteString(`<string>`)
		xmlEscape(b, x)
		b.WriteString(`</string>`)
	case bool:
		if x {
			b.WriteString(`<boolean>1</boolean>`)
		} else {
			b.WriteString(`<boolean>0</boolean>`)
		}
	case int:
		if err := writeI4(b, int64(x)); err != nil {
			return err
		}
	case int32:
		if err := writeI4(b, int64(x)); err != nil {
			return err
		}
	case int64:
		if err := writeI4(b, x); err != nil {
			return err
		}
	case float64:
		writeDouble(b, x)
	case float32:
		writeDouble(b, float64(x))
	case []byte:
		b.WriteString(`<base64>`)
		b.WriteString(base64.StdEncoding.EncodeToString(x))
		b.WriteString(`</base64>`)
	case []any:
		return encodeArray(b, len(x), func(i int) any { return x[i] }, depth)
	case []string:
		return encodeArray(b, len(x), func(i int) any { return x[i] }, depth)
	case []int:
		return encodeArray(b, len(x), func(i int) any { return x[i] }, depth)
	case []float64:
		return encodeArray(b, len(x), func(i int) any { return x[i] }, depth)
	case []bool:
		return encodeArray(b, len(x), func(i int) any { return x[i] }, depth)
	case map[string]any:
		keys := make([]string, 0, len(x))
		for k := range x {
			keys = append(keys, k)
		}
		sort.Strings(keys)
		b.WriteString(`<struct>`)
		for _, k := range keys {
			b.WriteString(`<member><name>`)
			xmlEscape(b, k)
			b.WriteString(`</name>`)
			if err := encodeXMLRPC(b, x[k], depth+1); err != nil {
				return fmt.Errorf("key %q: %w", k, err)
			}
			b.WriteString(`</member>`)
		}
		b.WriteString(`</struct>`)
	case nil:
		return fmt.Errorf("XML-RPC (as ROS uses it) has no null value")
	default:
		return fmt.Errorf("cannot encode a %T in XML-RPC", v)
	}
	b.WriteString(`</value>`)
	return nil
}

func encodeArray(b *bytes.Buffer, n int, at func(int) any, depth int) error {
	b.WriteString(`<array><data>`)
	for i := 0; i < n; i++ {
		if err := encodeXMLRPC(b, at(i), depth+1); err != nil {
			return fmt.Errorf("element %d: %w", i, err)
		}
	}
	b.WriteString(`</data></array></value>`)
	return nil
}

func writeI4(b *bytes.Buffer, x int64) error {
	if x < math.MinInt32 || x > math.MaxInt32 {
		return fmt.Errorf("integer %d does not fit XML-RPC's 32-bit int", x)
	}
	b.WriteString(`<int>`)
	b.WriteString(strconv.FormatInt(x, 10))
	b.WriteString(`</int>`)
	return nil
}

func writeDouble(b *bytes.Buffer, x float64) {
	b.WriteString(`<double>`)
	switch {
	case math.IsNaN(x):
		b.WriteString("nan") // what Python's xmlrpc writes and reads
	case math.IsInf(x, 1):
		b.WriteString("inf")
	case math.IsInf(x, -1):
		b.WriteString("-inf")
	default:
		b.WriteString(strconv.FormatFloat(x, 'g', -1, 64))
	}
	b.WriteString(`</double>`)
}

func xmlEscape(b *bytes.Buffer, s string) {
	_ = xml.EscapeText(b, []byte(s)) // writes to a bytes.Buffer cannot fail
}

// decodeXMLRPCResponse reads a methodResponse and returns its single
// parameter, or an error carrying the fault of a fault response. Values
// decode to int, float64, bool, string, []byte (base64), []any and
// map[string]any; dateTime.iso8601 decodes to its text, <nil/> to nil.
func decodeXMLRPCResponse(r io.Reader) (any, error) {
	d := &xrDecoder{d: xml.NewDecoder(r)}
	if err := d.start("methodResponse"); err != nil {
		return nil, err
	}
	tok, err := d.next()
	if err != nil {
		return nil, err
	}
	se, ok := tok.(xml.StartElement)
	if !ok {
		return nil, fmt.Errorf("xml-rpc: want <params> or <fault>, got %s", describeToken(tok))
	}
	switch se.Name.Local {
	case "params":
		if err := d.start("param"); err != nil {
			return nil, err
		}
		if err := d.start("value"); err != nil {
			return nil, err
		}
		v, err := d.value(0)
		if err != nil {
			return nil, err
		}
		if err := d.end("param"); err != nil {
			return nil, err
		}
		if err := d.end("params"); err != nil {
			return nil, err
		}
		if err := d.end("methodResponse"); err != nil {
			return nil, err
		}
		return v, nil
	case "fault":
		if err := d.start("value"); err != nil {
			return nil, err
		}
		v, err := d.value(0)
		if err != nil {
			return nil, err
		}
		if m, ok := v.(map[string]any); ok {
			return nil, fmt.Errorf("xml-rpc fault %v: %v", m["faultCode"], m["faultString"])
		}
		return nil, fmt.Errorf("xml-rpc fault: %v", v)
	default:
		return nil, fmt.Errorf("xml-rpc: want <params> or <fault>, got <%s>", se.Name.Local)
	}
}

type xrDecoder struct {
	d *xml.Decoder
}

// raw returns the next token with CharData copied, skipping processing
// instructions, comments and directives.
func (x *xrDecoder) raw() (xml.Token, error) {
	for {
		tok, err := x.d.Token()
		if err != nil {
			if err == io.EOF {
				return nil, fmt.Errorf("xml-rpc: unexpected end of document")
			}
			return nil, fmt.Errorf("xml-rpc: %w", err)
		}
		switch t := tok.(type) {
		case xml.ProcInst, xml.Comment, xml.Directive:
			continue
		case xml.CharData:
			return t.Copy(), nil
		default:
			return tok, nil
		}
	}
}

// next returns the next token that is not white space.
func (x *xrDecoder) next() (xml.Token, error) {
	for {
		tok, err := x.raw()
		if err != nil {
			return nil, err
		}
		if cd, ok := tok.(xml.CharData); ok && len(bytes.TrimSpace(cd)) == 0 {
			continue
		}
		return tok, nil
	}
}

func (x *xrDecoder) start(name string) error {
	tok, err := x.next()
	if err != nil {
		return err
	}
	if se, ok := tok.(xml.StartElement); ok && se.Name.Local == name {
		return nil
	}
	return fmt.Errorf("xml-rpc: want <%s>, got %s", name, describeToken(tok))
}

func (x *xrDecoder) end(name string) error {
	tok, err := x.next()
	if err != nil {
		return err
	}
	if ee, ok := tok.(xml.EndElement); ok && ee.Name.Local == name {
		return nil
	}
	return fmt.Errorf("xml-rpc: want </%s>, got %s", name, describeToken(tok))
}

// text reads character data up to </name>.
func (x *xrDecoder) text(name string) (string, error) {
	var sb strings.Builder
	for {
		tok, err := x.raw()
		if err != nil {
			return "", err
		}
		switch t := tok.(type) {
		case xml.CharData:
			sb.Write(t)
		case xml.EndElement:
			if t.Name.Local != name {
				return "", fmt.Errorf("xml-rpc: want </%s>, got </%s>", name, t.Name.Local)
			}
			return sb.String(), nil
		default:
			return "", fmt.Errorf("xml-rpc: want text in <%s>, got %s", name, describeToken(tok))
		}
	}
}

// value decodes the content of a <value> element whose start tag has been
// read, up to and including </value>.
func (x *xrDecoder) value(depth int) (any, error) {
	if depth > maxXMLRPCDepth {
		return nil, fmt.Errorf("xml-rpc: values nested deeper than %d", maxXMLRPCDepth)
	}
	var text []byte
	var tok xml.Token
	for {
		t, err := x.raw()
		if err != nil {
			return nil, err
		}
		if cd, ok := t.(xml.CharData); ok {
			text = append(text, cd...)
			continue
		}
		tok = t
		break
	}
	switch t := tok.(type) {
	case xml.EndElement: // untyped value: a string
		if t.Name.Local != "value" {
			return nil, fmt.Errorf("xml-rpc: want </value>, got </%s>", t.Name.Local)
		}
		return string(text), nil
	case xml.StartElement:
		if len(bytes.TrimSpace(text)) != 0 {
			return nil, fmt.Errorf("xml-rpc: text before <%s> in <value>", t.Name.Local)
		}
		v, err := x.typed(t.Name.Local, depth)
		if err != nil {
			return nil, err
		}
		if err := x.end("value"); err != nil {
			return nil, err
		}
		return v, nil
	default:
		return nil, fmt.Errorf("xml-rpc: unexpected %s in <value>", describeToken(tok))
	}
}

func (x *xrDecoder) typed(kind string, depth int) (any, error) {
	switch kind {
	case "string", "dateTime.iso8601":
		return x.text(kind)
	case "int", "i4", "i8":
		s, err := x.text(kind)
		if err != nil {
			return nil, err
		}
		n, err := strconv.ParseInt(strings.TrimSpace(s), 10, 64)
		if err != nil {
			return nil, fmt.Errorf("xml-rpc: <%s> %q is not an integer", kind, s)
		}
		return int(n), nil
	case "boolean":
		s, err := x.text(kind)
		if err != nil {
			return nil, err
		}
		switch strings.TrimSpace(s) {
		case "1":
			return true, nil
		case "0":
			return false, nil
		}
		return nil, fmt.Errorf("xml-rpc: <boolean> %q is not 0 or 1", s)
	case "double":
		s, err := x.text(kind)
		if err != nil {
			return nil, err
		}
		f, err := strconv.ParseFloat(strings.TrimSpace(s), 64)
		if err != nil {
			return nil, fmt.Errorf("xml-rpc: <double> %q is not a number", s)
		}
		return f, nil
	case "base64":
		s, err := x.text(kind)
		if err != nil {
			return nil, err
		}
		b, err := base64.StdEncoding.DecodeString(strings.Join(strings.Fields(s), ""))
		if err != nil {
			return nil, fmt.Errorf("xml-rpc: <base64>: %w", err)
		}
		return b, nil
	case "nil":
		if err := x.end("nil"); err != nil {
			return nil, err
		}
		return nil, nil
	case "array":
		if err := x.start("data"); err != nil {
			return nil, err
		}
		out := []any{}
		for {
			tok, err := x.next()
			if err != nil {
				return nil, err
			}
			if ee, ok := tok.(xml.EndElement); ok && ee.Name.Local == "data" {
				break
			}
			if se, ok := tok.(xml.StartElement); !ok || se.Name.Local != "value" {
				return nil, fmt.Errorf("xml-rpc: want <value> in <data>, got %s", describeToken(tok))
			}
			v, err := x.value(depth + 1)
			if err != nil {
				return nil, err
			}
			out = append(out, v)
		}
		return out, x.end("array")
	case "struct":
		out := map[string]any{}
		for {
			tok, err := x.next()
			if err != nil {
				return nil, err
			}
			if ee, ok := tok.(xml.EndElement); ok && ee.Name.Local == "struct" {
				return out, nil
			}
			if se, ok := tok.(xml.StartElement); !ok || se.Name.Local != "member" {
				return nil, fmt.Errorf("xml-rpc: want <member> in <struct>, got %s", describeToken(tok))
			}
			if err := x.start("name"); err != nil {
				return nil, err
			}
			name, err := x.text("name")
			if err != nil {
				return nil, err
			}
			if err := x.start("value"); err != nil {
				return nil, err
			}
			v, err := x.value(depth + 1)
			if err != nil {
				return nil, err
			}
			if err := x.end("member"); err != nil {
				return nil, err
			}
			out[name] = v
		}
	default:
		return nil, fmt.Errorf("xml-rpc: unknown value type <%s>", kind)
	}
}

func describeToken(tok xml.Token) string {
	switch t := tok.(type) {
	case xml.StartElement:
		return "<" + t.Name.Local + ">"
	case xml.EndElement:
		return "</" + t.Name.Local + ">"
	case xml.CharData:
		s := string(t)
		if len(s) > 20 {
			s = s[:20] + "..."
		}
		return fmt.Sprintf("text %q", s)
	default:
		return fmt.Sprintf("%T", tok)
	}
}

// MasterPID asks the ROS master at uri (http://host:port) for its process
// id; an error means no master answers there within timeout.
func MasterPID(ctx context.Context, uri string, timeout time.Duration) (int, error) {
	if _, err := masterAddress(uri); err != nil {
		return 0, fmt.Errorf("master URI %s: %w", uri, err)
	}
	return newRPCClient(uri, "/ttm_master_check", timeout).getPid(ctx)
}

// LookupNode asks the ROS master at uri for the slave API URI of the node
// name; an error when the master does not know it or does not answer.
func LookupNode(ctx context.Context, uri, name string, timeout time.Duration) (string, error) {
	got, found, err := newRPCClient(uri, "/ttm_master_check", timeout).lookupNode(ctx, name)
	if err != nil {
		return "", err
	}
	if !found {
		return "", fmt.Errorf("the master at %s does not know %s", uri, name)
	}
	return got, nil
}
