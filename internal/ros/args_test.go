package ros

import (
	"math"
	"reflect"
	"strings"
	"testing"

	"github.com/ttmrobot/ttm/internal/rostest"
)

func TestParseArgsFullCommandLine(t *testing.T) {
	args := []string{"node", "--policy", "X", "_rate:=10", "__name:=foo", "image:=/cam/image",
		"--verbose", "__ns:=robot", "~out:=status", "_gains:=[1, 2.5]", "__log:=/tmp/foo.log", "pos"}
	a, err := ParseArgs("ttm_node", args, rostest.Env(nil))
	if err != nil {
		t.Fatal(err)
	}
	if got, want := a.Rest, []string{"node", "--policy", "X", "--verbose", "pos"}; !reflect.DeepEqual(got, want) {
		t.Errorf("Rest = %q, want %q", got, want)
	}
	if a.Name != "foo" || a.Namespace != "/robot" || a.NodeName() != "/robot/foo" {
		t.Errorf("Name, Namespace, NodeName = %q, %q, %q; want foo, /robot, /robot/foo", a.Name, a.Namespace, a.NodeName())
	}
	if a.MasterURI != DefaultMasterURI || a.MasterAddress != "localhost:11311" {
		t.Errorf("master = %q (%q), want the default", a.MasterURI, a.MasterAddress)
	}
	if a.Log != "/tmp/foo.log" {
		t.Errorf("Log = %q", a.Log)
	}
	wantRemaps := []Remap{
		{From: "image", To: "/cam/image", ResolvedFrom: "/robot/image", ResolvedTo: "/cam/image"},
		{From: "~out", To: "status", ResolvedFrom: "/robot/foo/out", ResolvedTo: "/robot/status"},
	}
	if !reflect.DeepEqual(a.Remaps, wantRemaps) {
		t.Errorf("Remaps = %+v, want %+v", a.Remaps, wantRemaps)
	}
	wantParams := []Param{
		{Name: "rate", Key: "/robot/foo/rate", Raw: "10", Value: 10},
		{Name: "gains", Key: "/robot/foo/gains", Raw: "[1, 2.5]", Value: []any{1, 2.5}},
	}
	if !reflect.DeepEqual(a.Params, wantParams) {
		t.Errorf("Params = %#v, want %#v", a.Params, wantParams)
	}
	if p, ok := a.Param("/robot/foo/rate"); !ok || p.Value != 10 {
		t.Errorf("Param(/robot/foo/rate) = %v, %v", p, ok)
	}
	for name, want := range map[string]string{"image": "/cam/image", "~out": "/robot/status", "cmd": "/robot/cmd", "~rate": "/robot/foo/rate"} {
		if got, err := a.Resolve(name); err != nil || got != want {
			t.Errorf("Resolve(%q) = %q, %v; want %q", name, got, err, want)
		}
	}
}

// Command-line forms win over the environment; the environment over the
// defaults.
func TestParseArgsEnvironmentPrecedence(t *testing.T) {
	env := map[string]string{
		"ROS_MASTER_URI": "http://10.0.0.1:11311",
		"ROS_NAMESPACE":  "envns/",
		"ROS_IP":         "10.0.0.5",
		"ROS_HOSTNAME":   "robot.local",
	}
	for _, tc := range []struct {
		name             string
		args             []string
		env              map[string]string
		master, ns, host string
	}{
		{"defaults", nil, nil, DefaultMasterURI, "/", ""},
		{"environment", nil, env, "http://10.0.0.1:11311", "/envns", "robot.local"},
		{"ROS_IP only", nil, map[string]string{"ROS_IP": "10.0.0.5"}, DefaultMasterURI, "/", "10.0.0.5"},
		{"empty env values are unset", nil, map[string]string{"ROS_MASTER_URI": "", "ROS_NAMESPACE": "", "ROS_IP": ""}, DefaultMasterURI, "/", ""},
		{"arguments win", []string{"__master:=http://127.0.0.1:12345/", "__ns:=/argns", "__ip:=127.0.0.1"}, env,
			"http://127.0.0.1:12345/", "/argns", "127.0.0.1"},
		{"__hostname beats __ip", []string{"__ip:=127.0.0.1", "__hostname:=me.local"}, env, "http://10.0.0.1:11311", "/envns", "me.local"},
		{"last occurrence wins", []string{"__ns:=/a", "__ns:=/b"}, nil, DefaultMasterURI, "/b", ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			a, err := ParseArgs("n", tc.args, rostest.Env(tc.env))
			if err != nil {
				t.Fatal(err)
			}
			if a.MasterURI != tc.master || a.Namespace != tc.ns || a.Host != tc.host {
				t.Errorf("master, ns, host = %q, %q, %q; want %q, %q, %q", a.MasterURI, a.Namespace, a.Host, tc.master, tc.ns, tc.host)
			}
		})
	}
}

func TestParseArgsErrors(t *testing.T) {
	for _, tc := range []struct {
		args    []string
		env     map[string]string
		wantErr string
	}{
		{[]string{"__name:=a/b"}, nil, "__name:=a/b"},
		{[]string{"__name:=~a"}, nil, "__name:=~a"},
		{[]string{"__name:="}, nil, "empty value for __name"},
		{[]string{"__ns:=~x"}, nil, "private"},
		{[]string{"__ns:=a//b"}, nil, `"//"`},
		{[]string{":=x"}, nil, "empty name"},
		{[]string{"a:="}, nil, "empty remap target"},
		{[]string{"_rate:="}, nil, "empty value for private parameter ~rate"},
		{[]string{"a b:=c"}, nil, "remap a b:=c: source"},
		{[]string{"a:=b:=c"}, nil, "remap a:=b:=c: target"},
		{[]string{"1a:=b"}, nil, "first character"},
		{[]string{"_:=b"}, nil, "remap _:=b"},
		{[]string{"_a~b:=1"}, nil, "_a~b:=1"},
		{[]string{"_p:=[1,"}, nil, "not a YAML value"},
		{[]string{"_p:=~"}, nil, "null"},
		{[]string{"_p:=99999999999"}, nil, "32 bits"},
		{[]string{"_p:={1: a}"}, nil, "keys must be strings"},
		{[]string{"_p:=[1, ~]"}, nil, "list element 1"},
		{[]string{"__master:=localhost:11311"}, nil, "scheme must be http"},
		{[]string{"__master:=http://localhost"}, nil, "no port"},
		{[]string{"__master:=http://:11311"}, nil, "no host"},
		{[]string{"__master:=http://localhost:99999"}, nil, "not in 1..65535"},
		{[]string{"__master:=http://localhost:11311/path"}, nil, "no user, path"},
		{[]string{"__master:=https://localhost:11311"}, nil, "scheme must be http"},
		{nil, map[string]string{"ROS_MASTER_URI": "localhost"}, "ROS_MASTER_URI=localhost"},
		{[]string{"__ip:=robot"}, nil, "not an IP address"},
		{nil, map[string]string{"ROS_IP": "1.2.3"}, "ROS_IP=1.2.3"},
		{[]string{"__hostname:=a b"}, nil, "not allowed in a host name"},
		{nil, map[string]string{"ROS_HOSTNAME": "-bad"}, "ROS_HOSTNAME=-bad"},
		{nil, map[string]string{"ROS_NAMESPACE": "~p"}, "ROS_NAMESPACE=~p"},
	} {
		_, err := ParseArgs("node", tc.args, rostest.Env(tc.env))
		if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
			t.Errorf("ParseArgs(%q, env %v) = %v, want error containing %q", tc.args, tc.env, err, tc.wantErr)
		}
	}
	if _, err := ParseArgs("", nil, rostest.Env(nil)); err == nil || !strings.Contains(err.Error(), "node name is empty") {
		t.Errorf("ParseArgs without a name = %v, want a node name error", err)
	}
	if _, err := ParseArgs("bad-name", nil, rostest.Env(nil)); err == nil || !strings.Contains(err.Error(), "node name") {
		t.Errorf("ParseArgs with default name bad-name = %v, want a node name error", err)
	}
}

// Arguments that are not ROS arguments stay with the caller, untouched and
// in order; flags that happen to hold ":=" too.
func TestParseArgsLeavesFlags(t *testing.T) {
	args := []string{"-x=a:=b", "--", "--opt", "a:b", "=", "plain", "_under", "__dunder"}
	a, err := ParseArgs("n", args, rostest.Env(nil))
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(a.Rest, args) {
		t.Errorf("Rest = %q, want %q", a.Rest, args)
	}
	if len(a.Remaps)+len(a.Params)+len(a.Special) != 0 {
		t.Errorf("found ROS arguments in %q", args)
	}
}

func TestParseArgsSpecialAndWhitespace(t *testing.T) {
	a, err := ParseArgs("n", []string{" a := b ", "__future_key:=1", "_s:= 'x y' "}, rostest.Env(nil))
	if err != nil {
		t.Fatal(err)
	}
	if len(a.Remaps) != 1 || a.Remaps[0].ResolvedFrom != "/a" || a.Remaps[0].ResolvedTo != "/b" {
		t.Errorf("Remaps = %+v, want /a -> /b", a.Remaps)
	}
	if a.Special["__future_key"] != "1" {
		t.Errorf("Special = %v, want __future_key recorded", a.Special)
	}
	if p, ok := a.Param("/n/s"); !ok || p.Value != "x y" {
		t.Errorf("Param(/n/s) = %+v, %v; want the string \"x y\"", p, ok)
	}
}

func TestParseParamValueYAMLTypes(t *testing.T) {
	for _, tc := range []struct {
		raw  string
		want any
	}{
		{"7", 7},
		{"-3", -3},
		{"0x1F", 31},
		{"7.5", 7.5},
		{"1e3", 1000.0},
		{".5", 0.5},
		{"7.0", 7.0},
		{"true", true},
		{"False", false},
		{"yes", "yes"}, // YAML 1.2 core schema: a string
		{"hello", "hello"},
		{"'7'", "7"},
		{`"a:=b"`, "a:=b"},
		{"foo bar", "foo bar"},
		{"[1, 2.5, a]", []any{1, 2.5, "a"}},
		{"[]", []any{}},
		{"{kp: 1.5, name: arm}", map[string]any{"kp": 1.5, "name": "arm"}},
		{"[[1, 2], [3]]", []any{[]any{1, 2}, []any{3}}},
		{"2147483647", math.MaxInt32},
		{"-2147483648", math.MinInt32},
		{"2001-12-14", "2001-12-14"},
	} {
		got, err := ParseParamValue(tc.raw)
		if err != nil || !reflect.DeepEqual(got, tc.want) {
			t.Errorf("ParseParamValue(%q) = %#v, %v; want %#v", tc.raw, got, err, tc.want)
		}
	}
	if v, err := ParseParamValue(".nan"); err != nil || !math.IsNaN(v.(float64)) {
		t.Errorf("ParseParamValue(.nan) = %v, %v; want NaN", v, err)
	}
	if _, err := ParseParamValue("2147483648"); err == nil {
		t.Errorf("ParseParamValue(2147483648) accepted an integer beyond 32 bits")
	}
}

// FuzzParseArgs checks that the parser never panics, that the rest is the
// non-ROS arguments in order, and that everything it resolves is legal.
func FuzzParseArgs(f *testing.F) {
	for _, s := range []string{
		"node\x00--policy\x00X\x00_rate:=10\x00__name:=foo\x00image:=/cam/image",
		"__ns:=/robot\x00chatter:=/remapped\x00_rate:=7.5",
		"__name:=a/b", "a:=b:=c", "_p:=[1, {a: b}]", "__master:=http://h:1/", ":=", "_:=_",
		"~x:=~y\x00__ns:=q", "-f=a:=b\x00x", "_p:=!!binary aGk=", "_p:=&a [*a]",
	} {
		f.Add(s, "")
	}
	f.Add("", "robot")
	f.Fuzz(func(t *testing.T, joined, envNS string) {
		args := strings.Split(joined, "\x00")
		a, err := ParseArgs("fuzz_node", args, rostest.Env(map[string]string{"ROS_NAMESPACE": envNS}))
		if err != nil {
			if err.Error() == "" {
				t.Fatal("empty error message")
			}
			return
		}
		var rest []string
		nROS := 0
		for _, arg := range args {
			if _, _, ok := splitROSArg(arg); ok {
				nROS++
			} else {
				rest = append(rest, arg)
			}
		}
		if !reflect.DeepEqual(a.Rest, rest) {
			t.Fatalf("Rest = %q, want %q", a.Rest, rest)
		}
		if nROS < len(a.Remaps)+len(a.Params) {
			t.Fatalf("%d ROS arguments but %d remaps and %d params", nROS, len(a.Remaps), len(a.Params))
		}
		if ValidateName(a.NodeName()) != nil || !IsGlobalName(a.NodeName()) {
			t.Fatalf("node name %q is not legal", a.NodeName())
		}
		for _, r := range a.Remaps {
			if ValidateName(r.ResolvedFrom) != nil || ValidateName(r.ResolvedTo) != nil || !IsGlobalName(r.ResolvedFrom) || !IsGlobalName(r.ResolvedTo) {
				t.Fatalf("remap %+v resolved to illegal names", r)
			}
		}
		for _, p := range a.Params {
			if !IsGlobalName(p.Key) || ValidateName(p.Key) != nil || p.Value == nil {
				t.Fatalf("param %+v has an illegal key or no value", p)
			}
		}
	})
}
