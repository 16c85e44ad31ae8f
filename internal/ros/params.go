package ros

import (
	"context"
	"fmt"
	"time"
)

// ParamSource says where a parameter value came from.
type ParamSource int

// Parameter sources, in the order Params consults them.
const (
	SourceDefault     ParamSource = iota // the getter's default
	SourceCommandLine                    // a _name:=value argument
	SourceServer                         // the parameter server
)

func (s ParamSource) String() string {
	switch s {
	case SourceDefault:
		return "default"
	case SourceCommandLine:
		return "command line"
	case SourceServer:
		return "parameter server"
	default:
		return fmt.Sprintf("ParamSource(%d)", int(s))
	}
}

// ParamTypeError is returned when a parameter holds a value of the wrong type.
type ParamTypeError struct {
	Key    string      // resolved key, e.g. /robot/ttm_node/rate
	Want   string      // e.g. "float"
	Value  any         // the value found
	Source ParamSource // where it was found
}

func (e *ParamTypeError) Error() string {
	return fmt.Sprintf("parameter %s (from the %s): want %s, got %s %s",
		e.Key, e.Source, e.Want, xmlrpcTypeName(e.Value), shortValue(e.Value))
}

// DefaultParamTimeout bounds one parameter server call.
const DefaultParamTimeout = 5 * time.Second

// Params reads a node's parameters: a command-line _name:=value first, then
// the parameter server, then the getter's default. Names resolve like any
// ROS name for the node ("~rate" is private, "/use_sim_time" global) and
// remappings apply. Getters check the type and return *ParamTypeError on a
// mismatch; an int is accepted where a float is wanted (as roscpp does).
// Params holds no goroutine; it is safe for concurrent use.
type Params struct {
	args *Args
	rpc  *rpcClient
}

// NewParams returns the parameter reader of the node described by a,
// talking to a.MasterURI with calls bounded by timeout (0 means
// DefaultParamTimeout).
func NewParams(a *Args, timeout time.Duration) *Params {
	if timeout <= 0 {
		timeout = DefaultParamTimeout
	}
	return &Params{args: a, rpc: newRPCClient(a.MasterURI, a.NodeName(), timeout)}
}

// Lookup returns the value of name and where it came from; found is false
// (and source SourceDefault) when neither the command line nor the server
// has it.
func (p *Params) Lookup(ctx context.Context, name string) (key string, v any, source ParamSource, found bool, err error) {
	key, err = p.args.Resolve(name)
	if err != nil {
		return "", nil, SourceDefault, false, fmt.Errorf("parameter %q: %w", name, err)
	}
	if cl, ok := p.args.Param(key); ok {
		return key, cl.Value, SourceCommandLine, true, nil
	}
	v, found, err = p.rpc.getParam(ctx, key)
	if err != nil {
		return key, nil, SourceDefault, false, fmt.Errorf("get parameter %s: %w", key, err)
	}
	if !found {
		return key, nil, SourceDefault, false, nil
	}
	return key, v, SourceServer, true, nil
}

// Float64 returns the float parameter name, or def when it is not set.
func (p *Params) Float64(ctx context.Context, name string, def float64) (float64, error) {
	return getTyped(ctx, p, name, def, "float", asFloat64)
}

// Int returns the int parameter name, or def when it is not set.
func (p *Params) Int(ctx context.Context, name string, def int) (int, error) {
	return getTyped(ctx, p, name, def, "int", func(v any) (int, bool) { n, ok := v.(int); return n, ok })
}

// Bool returns the bool parameter name, or def when it is not set.
func (p *Params) Bool(ctx context.Context, name string, def bool) (bool, error) {
	return getTyped(ctx, p, name, def, "bool", func(v any) (bool, bool) { b, ok := v.(bool); return b, ok })
}

// String returns the string parameter name, or def when it is not set.
func (p *Params) String(ctx context.Context, name string, def string) (string, error) {
	return getTyped(ctx, p, name, def, "string", func(v any) (string, bool) { s, ok := v.(string); return s, ok })
}

// Float64s returns the list-of-floats parameter name (ints accepted), or def
// when it is not set.
func (p *Params) Float64s(ctx context.Context, name string, def []float64) ([]float64, error) {
	return getTyped(ctx, p, name, def, "list of floats", func(v any) ([]float64, bool) {
		l, ok := v.([]any)
		if !ok {
			return nil, false
		}
		out := make([]float64, len(l))
		for i, e := range l {
			if out[i], ok = asFloat64(e); !ok {
				return nil, false
			}
		}
		return out, true
	})
}

// Strings returns the list-of-strings parameter name, or def when it is not
// set.
func (p *Params) Strings(ctx context.Context, name string, def []string) ([]string, error) {
	return getTyped(ctx, p, name, def, "list of strings", func(v any) ([]string, bool) {
		l, ok := v.([]any)
		if !ok {
			return nil, false
		}
		out := make([]string, len(l))
		for i, e := range l {
			if out[i], ok = e.(string); !ok {
				return nil, false
			}
		}
		return out, true
	})
}

// SetCommandLineParams writes every _name:=value argument to the parameter
// server under its resolved key, as rospy and roscpp do at start-up, so
// other nodes and rosparam see it. A restarted master has lost them: call it
// again after reconnecting (the Supervisor does).
func (p *Params) SetCommandLineParams(ctx context.Context) error {
	for _, cl := range p.args.Params {
		if err := p.rpc.setParam(ctx, cl.Key, cl.Value); err != nil {
			return fmt.Errorf("set parameter %s from _%s:=%s: %w", cl.Key, cl.Name, cl.Raw, err)
		}
	}
	return nil
}

// UseSimTime reports /use_sim_time (false when unset): whether node time
// follows /clock.
func (p *Params) UseSimTime(ctx context.Context) (bool, error) {
	return p.Bool(ctx, "/use_sim_time", false)
}

func getTyped[T any](ctx context.Context, p *Params, name string, def T, want string, conv func(any) (T, bool)) (T, error) {
	key, v, src, found, err := p.Lookup(ctx, name)
	if err != nil || !found {
		return def, err
	}
	out, ok := conv(v)
	if !ok {
		return def, &ParamTypeError{Key: key, Want: want, Value: v, Source: src}
	}
	return out, nil
}

func asFloat64(v any) (float64, bool) {
	switch x := v.(type) {
	case float64:
		return x, true
	case int:
		return float64(x), true
	}
	return 0, false
}

func xmlrpcTypeName(v any) string {
	switch v.(type) {
	case int:
		return "int"
	case float64:
		return "float"
	case bool:
		return "bool"
	case string:
		return "string"
	case []any:
		return "list"
	case map[string]any:
		return "dictionary"
	case []byte:
		return "binary"
	case nil:
		return "nil"
	default:
		return fmt.Sprintf("%T", v)
	}
}

func shortValue(v any) string {
	s := fmt.Sprint(v)
	if str, ok := v.(string); ok {
		s = fmt.Sprintf("%q", str)
	}
	if len(s) > 60 {
		s = s[:60] + "..."
	}
	return s
}
