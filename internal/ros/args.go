package ros

import (
	"fmt"
	"math"
	"net"
	"net/url"
	"os"
	"sort"
	"strconv"
	"strings"
	"time"

	"gopkg.in/yaml.v3"
)

// DefaultMasterURI is the master a node contacts when neither __master:= nor
// ROS_MASTER_URI is given (the ROS default).
const DefaultMasterURI = "http://localhost:11311"

// Param is one private parameter _name:=value of the command line.
type Param struct {
	Name  string // as written, without the leading '_' (e.g. "rate")
	Key   string // resolved global key (e.g. "/ns/node/rate")
	Raw   string // the value as written
	Value any    // YAML-typed: int, float64, bool, string, []any, map[string]any
}

// Args is the ROS part of a node's command line and environment, parsed and
// resolved as rospy and roscpp do. Build it with ParseArgs.
type Args struct {
	// Name is the base name of the node (__name:=, else the default).
	Name string
	// Namespace is the global canonical namespace (__ns:=, else
	// ROS_NAMESPACE, else "/").
	Namespace string
	// MasterURI is the validated master URI (__master:=, else ROS_MASTER_URI,
	// else DefaultMasterURI), e.g. "http://127.0.0.1:11311".
	MasterURI string
	// MasterAddress is host:port of MasterURI.
	MasterAddress string
	// Host is the address other nodes use to reach this node: __hostname:=,
	// else __ip:=, else ROS_HOSTNAME, else ROS_IP, else "" (automatic).
	Host string
	// IP and Hostname record __ip:= / ROS_IP and __hostname:= / ROS_HOSTNAME.
	IP, Hostname string
	// Log records __log:= (the log file roslaunch assigns); not used otherwise.
	Log string
	// Special holds other "__key:=value" arguments, recorded and ignored.
	Special map[string]string
	// Remaps holds the from:=to arguments in command-line order.
	Remaps []Remap
	// Params holds the _name:=value arguments in command-line order.
	Params []Param
	// Rest holds the arguments that are not ROS arguments, in order.
	Rest []string

	resolver *Resolver
	params   map[string]int // Key -> index in Params (last one wins)
}

// LookupEnv reads an environment variable; os.LookupEnv has this type.
type LookupEnv func(key string) (string, bool)

// ParseArgs splits args (without the program name) into ROS arguments and
// the rest, reading ROS_MASTER_URI, ROS_IP, ROS_HOSTNAME and ROS_NAMESPACE
// through env (nil means os.LookupEnv). Command-line forms win over the
// environment. defaultName is the node's name when __name:= is absent.
//
// A ROS argument is any argument holding ":=" that does not start with '-'
// (so "--flag=a:=b" stays with the caller's flags). Its kinds:
//
//	__name:=n  __ns:=ns  __master:=uri  __ip:=ip  __hostname:=h  __log:=file
//	_param:=yaml-value      private parameter ~param
//	from:=to                remapping, both sides resolved before matching
func ParseArgs(defaultName string, args []string, env LookupEnv) (*Args, error) {
	if env == nil {
		env = os.LookupEnv
	}
	a := &Args{Name: defaultName, Special: map[string]string{}}
	special := map[string]string{}
	type kv struct{ k, v string }
	var remaps, params []kv
	for i, arg := range args {
		k, v, ok := splitROSArg(arg)
		if !ok {
			a.Rest = append(a.Rest, arg)
			continue
		}
		if k == "" {
			return nil, fmt.Errorf("argument %d %q: empty name before \":=\"", i+1, arg)
		}
		switch {
		case strings.HasPrefix(k, "__"):
			if v == "" {
				return nil, fmt.Errorf("argument %d %q: empty value for %s", i+1, arg, k)
			}
			special[k] = v // the last occurrence wins, as in rospy
		case len(k) > 1 && k[0] == '_':
			if v == "" {
				return nil, fmt.Errorf("argument %d %q: empty value for private parameter ~%s", i+1, arg, k[1:])
			}
			params = append(params, kv{k[1:], v})
		default:
			if v == "" {
				return nil, fmt.Errorf("argument %d %q: empty remap target", i+1, arg)
			}
			remaps = append(remaps, kv{k, v})
		}
	}

	// Name and namespace first: everything else resolves against them.
	for _, k := range sortedKeys(special) {
		v := special[k]
		switch k {
		case "__name":
			if err := ValidateBaseName(v); err != nil {
				return nil, fmt.Errorf("__name:=%s: %w (use __ns:= for a namespace)", v, err)
			}
			a.Name = v
		case "__ns":
			ns, err := CanonicalNamespace(v)
			if err != nil {
				return nil, fmt.Errorf("__ns:=%s: %w", v, err)
			}
			a.Namespace = ns
		case "__master":
			a.MasterURI = v
		case "__ip":
			if net.ParseIP(v) == nil {
				return nil, fmt.Errorf("__ip:=%s: not an IP address", v)
			}
			a.IP = v
		case "__hostname":
			if err := validateHostname(v); err != nil {
				return nil, fmt.Errorf("__hostname:=%s: %w", v, err)
			}
			a.Hostname = v
		case "__log":
			a.Log = v
		default:
			a.Special[k] = v
		}
	}
	if a.Name == "" {
		return nil, fmt.Errorf("node name is empty: pass a default name or __name:=")
	}
	if err := ValidateBaseName(a.Name); err != nil {
		return nil, fmt.Errorf("node name: %w", err)
	}

	if a.Namespace == "" {
		a.Namespace = "/"
		if v, ok := env("ROS_NAMESPACE"); ok && v != "" {
			ns, err := CanonicalNamespace(v)
			if err != nil {
				return nil, fmt.Errorf("ROS_NAMESPACE=%s: %w", v, err)
			}
			a.Namespace = ns
		}
	}
	masterFrom := "__master:="
	if a.MasterURI == "" {
		masterFrom = "ROS_MASTER_URI="
		if v, ok := env("ROS_MASTER_URI"); ok && v != "" {
			a.MasterURI = v
		} else {
			a.MasterURI = DefaultMasterURI
		}
	}
	addr, err := masterAddress(a.MasterURI)
	if err != nil {
		return nil, fmt.Errorf("%s%s: %w", masterFrom, a.MasterURI, err)
	}
	a.MasterAddress = addr
	if a.IP == "" {
		if v, ok := env("ROS_IP"); ok && v != "" {
			if net.ParseIP(v) == nil {
				return nil, fmt.Errorf("ROS_IP=%s: not an IP address", v)
			}
			a.IP = v
		}
	}
	if a.Hostname == "" {
		if v, ok := env("ROS_HOSTNAME"); ok && v != "" {
			if err := validateHostname(v); err != nil {
				return nil, fmt.Errorf("ROS_HOSTNAME=%s: %w", v, err)
			}
			a.Hostname = v
		}
	}
	// roscpp and rosgraph: __hostname, __ip, ROS_HOSTNAME, ROS_IP.
	_, hostArg := special["__hostname"]
	_, ipArg := special["__ip"]
	switch {
	case hostArg:
		a.Host = a.Hostname
	case ipArg:
		a.Host = a.IP
	case a.Hostname != "":
		a.Host = a.Hostname
	default:
		a.Host = a.IP
	}

	a.Remaps = make([]Remap, len(remaps))
	for i, r := range remaps {
		a.Remaps[i] = Remap{From: r.k, To: r.v}
	}
	res, err := NewResolver(JoinName(a.Namespace, a.Name), a.Remaps)
	if err != nil {
		return nil, err
	}
	a.resolver = res

	a.params = make(map[string]int, len(params))
	for _, p := range params {
		key, err := res.Resolve("~" + p.k)
		if err != nil {
			return nil, fmt.Errorf("private parameter _%s:=%s: %w", p.k, p.v, err)
		}
		val, err := ParseParamValue(p.v)
		if err != nil {
			return nil, fmt.Errorf("private parameter _%s:=%s: %w", p.k, p.v, err)
		}
		a.params[key] = len(a.Params)
		a.Params = append(a.Params, Param{Name: p.k, Key: key, Raw: p.v, Value: val})
	}
	return a, nil
}

// splitROSArg splits "k:=v" at the first ":=" and trims spaces around both
// sides (rospy does). ok is false for non-ROS arguments.
func splitROSArg(arg string) (k, v string, ok bool) {
	if strings.HasPrefix(arg, "-") {
		return "", "", false
	}
	k, v, ok = strings.Cut(arg, ":=")
	if !ok {
		return "", "", false
	}
	return strings.TrimSpace(k), strings.TrimSpace(v), true
}

// NodeName returns the full name of the node, e.g. "/robot/ttm_node".
func (a *Args) NodeName() string { return a.resolver.NodeName() }

// Resolver returns the node's name resolver (namespace, private names,
// remappings).
func (a *Args) Resolver() *Resolver { return a.resolver }

// Resolve resolves a topic, service or parameter name for this node and
// applies the remappings (see Resolver.Resolve).
func (a *Args) Resolve(name string) (string, error) { return a.resolver.Resolve(name) }

// Param returns the command-line private parameter with the resolved key.
func (a *Args) Param(key string) (Param, bool) {
	i, ok := a.params[key]
	if !ok {
		return Param{}, false
	}
	return a.Params[i], true
}

// ParseParamValue types a command-line parameter value as YAML does
// (rospy uses yaml.safe_load): "7" is an int, "7.5" a float, "true" a bool,
// "[1, 2]" a list, "{a: 1}" a map, anything else a string; quote a value to
// keep it a string ("'7'"). Integers must fit 32 bits, the XML-RPC limit of
// the parameter server; null values are rejected (the server cannot hold
// them).
func ParseParamValue(raw string) (any, error) {
	var v any
	if err := yaml.Unmarshal([]byte(raw), &v); err != nil {
		return nil, fmt.Errorf("not a YAML value: %w", err)
	}
	return normaliseYAML(v, raw)
}

// normaliseYAML maps yaml.v3's decoded values onto the types the parameter
// server holds (XML-RPC: i4, double, boolean, string, array, struct).
func normaliseYAML(v any, raw string) (any, error) {
	switch x := v.(type) {
	case nil:
		return nil, fmt.Errorf("null value: the parameter server cannot hold null")
	case int:
		if x < math.MinInt32 || x > math.MaxInt32 {
			return nil, fmt.Errorf("integer %d does not fit 32 bits (the XML-RPC limit); write it as a float (%d.0) or quote it", x, x)
		}
		return x, nil
	case uint64:
		return nil, fmt.Errorf("integer %d does not fit 32 bits (the XML-RPC limit)", x)
	case float64, bool, string:
		return x, nil
	case time.Time:
		// PyYAML would make a datetime; keep the text instead.
		return strings.TrimSpace(raw), nil
	case []byte:
		return string(x), nil
	case []any:
		out := make([]any, len(x))
		for i, e := range x {
			n, err := normaliseYAML(e, fmt.Sprint(e))
			if err != nil {
				return nil, fmt.Errorf("list element %d: %w", i, err)
			}
			out[i] = n
		}
		return out, nil
	case map[string]any:
		out := make(map[string]any, len(x))
		for k, e := range x {
			n, err := normaliseYAML(e, fmt.Sprint(e))
			if err != nil {
				return nil, fmt.Errorf("map key %q: %w", k, err)
			}
			out[k] = n
		}
		return out, nil
	case map[any]any:
		return nil, fmt.Errorf("map keys must be strings")
	default:
		return nil, fmt.Errorf("unsupported YAML value of type %T", v)
	}
}

// masterAddress validates a master URI ("http://host:port[/]") and returns
// host:port.
func masterAddress(uri string) (string, error) {
	u, err := url.Parse(uri)
	if err != nil {
		return "", fmt.Errorf("not a URI: %w", err)
	}
	if u.Scheme != "http" {
		return "", fmt.Errorf("scheme must be http (e.g. http://localhost:11311), got %q", u.Scheme)
	}
	if u.User != nil || u.RawQuery != "" || u.Fragment != "" || (u.Path != "" && u.Path != "/") {
		return "", fmt.Errorf("want http://host:port/ with no user, path, query or fragment")
	}
	host, port := u.Hostname(), u.Port()
	if host == "" {
		return "", fmt.Errorf("no host (want http://host:port/)")
	}
	if port == "" {
		return "", fmt.Errorf("no port (want http://%s:11311/ or another port)", host)
	}
	p, err := strconv.Atoi(port)
	if err != nil || p < 1 || p > 65535 {
		return "", fmt.Errorf("port %q is not in 1..65535", port)
	}
	return net.JoinHostPort(host, port), nil
}

// validateHostname accepts an IP address or a DNS name.
func validateHostname(h string) error {
	if net.ParseIP(h) != nil {
		return nil
	}
	if len(h) > 253 {
		return fmt.Errorf("host name longer than 253 characters")
	}
	for _, label := range strings.Split(h, ".") {
		if label == "" || len(label) > 63 {
			return fmt.Errorf("host name has an empty or over-long label")
		}
		for i := 0; i < len(label); i++ {
			c := label[i]
			if !isLetter(c) && !isDigit(c) && c != '-' && c != '_' {
				return fmt.Errorf("character %q is not allowed in a host name", c)
			}
		}
		if label[0] == '-' || label[len(label)-1] == '-' {
			return fmt.Errorf("host name label %q starts or ends with '-'", label)
		}
	}
	return nil
}

func sortedKeys(m map[string]string) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}
