package strategies

import (
	"errors"
	"fmt"
	"maps"
	"slices"
	"sort"
	"strings"
	"sync"
)

// ErrDuplicateStrategy is returned by Register, and by a Registry's
// RegisterScript, RegisterFunction and RegisterSequence, for a name
// already taken.
var ErrDuplicateStrategy = errors.New("a strategy of that name exists")

// builtin holds the built-in strategies, which this package and its
// siblings (published, deployed) register from init: the process's, which
// nothing changes once main runs.
var (
	builtinMu sync.RWMutex
	builtin   = map[string]Info{}
)

// Register adds a built-in strategy, which every Registry holds: the
// strategies of this package and of its sibling packages call it from
// init. A run's user strategies go into that run's Registry instead
// (Registry.RegisterScript).
func Register(i Info) error {
	builtinMu.Lock()
	defer builtinMu.Unlock()
	if _, dup := builtin[i.Name]; dup {
		return fmt.Errorf("%w: %q", ErrDuplicateStrategy, i.Name)
	}
	builtin[i.Name] = i
	return nil
}

// register adds a strategy of this package; each strategy file calls it
// from init.
func register(i Info) {
	if err := Register(i); err != nil {
		panic("strategies: " + err.Error())
	}
}

// Registry is the strategies one run may name: the built-in ones
// (Register), which every Registry holds, and the user strategies
// registered into it (RegisterScript, RegisterFunction, RegisterSequence),
// which no other Registry sees, so that two runs of one process (or two
// passes of a test) each register their own. A nil *Registry holds the
// built-in strategies only; registering into one panics. It is safe for
// concurrent use.
type Registry struct {
	mu   sync.RWMutex
	user map[string]Info
	// order is the names of user, in the order they were registered.
	order []string
}

// NewRegistry returns a Registry holding the built-in strategies alone.
func NewRegistry() *Registry { return &Registry{user: map[string]Info{}} }

// add adds user strategy i to r: a name of a built-in strategy, or of
// another user strategy of r, is ErrDuplicateStrategy.
func (r *Registry) add(i Info) error {
	if _, err := (*Registry)(nil).Lookup(i.Name); err == nil {
		return fmt.Errorf("%w: %q", ErrDuplicateStrategy, i.Name)
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	if _, dup := r.user[i.Name]; dup {
		return fmt.Errorf("%w: %q", ErrDuplicateStrategy, i.Name)
	}
	r.user[i.Name] = i
	r.order = append(r.order, i.Name)
	return nil
}

// userNames returns the names of r's user strategies, in the order they
// were registered.
func (r *Registry) userNames() []string {
	if r == nil {
		return nil
	}
	r.mu.RLock()
	defer r.mu.RUnlock()
	return slices.Clone(r.order)
}

// infos returns every strategy r holds, by name.
func (r *Registry) infos() map[string]Info {
	builtinMu.RLock()
	all := maps.Clone(builtin)
	builtinMu.RUnlock()
	if r != nil {
		r.mu.RLock()
		maps.Copy(all, r.user)
		r.mu.RUnlock()
	}
	return all
}

// order is the order in which All lists the strategies: the seeds' broken
// shapes first, then their fixes, then the fixed window's healing variants,
// then the hash-field counters (Redis 7.4), then the designs that are not
// fixed windows, then the published libraries
// (package strategies/published registers them), then the models of
// deployed limiters (package strategies/deployed); user strategies
// follow, by name.
var order = []string{
	"naive", "incr-expire", "multi-nx", "lua",
	"lua-heal", "function",
	"hash-incr-expire", "hash-multi-nx", "hash-lua",
	"gcra", "sliding-log", "token-bucket",
	"redis_rate", "ulule", "throttled",
	"envoy-ratelimit", "rack-attack", "rails-cache", "python-limits", "kong", "django-ratelimit",
	"laravel", "rate-limit-redis", "spring-gateway", "bucket4j", "mennanov",
}

// All returns every strategy r holds, in a stable order.
func (r *Registry) All() []Info {
	registry := r.infos()
	out := make([]Info, 0, len(registry))
	for _, n := range order {
		if i, ok := registry[n]; ok {
			out = append(out, i)
			delete(registry, n)
		}
	}
	rest := slices.Collect(maps.Keys(registry))
	sort.Strings(rest)
	for _, n := range rest {
		out = append(out, registry[n])
	}
	return out
}

// Names returns the names of every strategy r holds, in All's order.
func (r *Registry) Names() []string {
	all := r.All()
	names := make([]string, len(all))
	for i, s := range all {
		names[i] = s.Name
	}
	return names
}

// Lookup returns the Info r holds under name.
func (r *Registry) Lookup(name string) (Info, error) {
	builtinMu.RLock()
	i, ok := builtin[name]
	builtinMu.RUnlock()
	if !ok && r != nil {
		r.mu.RLock()
		i, ok = r.user[name]
		r.mu.RUnlock()
	}
	if !ok {
		return Info{}, fmt.Errorf("%w %q (accepted: %s)", ErrUnknownStrategy, name, strings.Join(r.Names(), ", "))
	}
	return i, nil
}

// Select expands "all" in names to every built-in strategy (Source ""),
// then r's user strategies in the order they were registered, drops
// repeats, and returns ErrUnknownStrategy, with the accepted names, for a
// name that r does not hold.
func (r *Registry) Select(names []string) ([]string, error) {
	for _, n := range names {
		if n != "all" {
			if _, err := r.Lookup(n); err != nil {
				return nil, err
			}
		}
	}
	all := append(BuiltinNames(), r.userNames()...)
	for _, n := range names {
		if n != "all" && !slices.Contains(all, n) {
			all = append(all, n) // known: a built-in one outside BuiltinNames
		}
	}
	return SelectFrom(names, all, ErrUnknownStrategy)
}

// New builds the strategy r holds under name. It validates cfg after
// applying defaults.
func (r *Registry) New(name string, cfg Config) (Strategy, error) {
	info, err := r.Lookup(name)
	if err != nil {
		return nil, err
	}
	return info.Build(cfg)
}

// Build builds the strategy i describes. It validates cfg after applying
// defaults.
func (i Info) Build(cfg Config) (Strategy, error) {
	cfg = cfg.WithDefaults()
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	return withTap(i.New(cfg), i), nil
}

// All returns every built-in strategy, in a stable order.
func All() []Info { return (*Registry)(nil).All() }

// Names returns the names of every built-in strategy, in All's order.
func Names() []string { return (*Registry)(nil).Names() }

// BuiltinNames returns the names of the built-in strategies (Source ""),
// in All's order: what "all" selects.
func BuiltinNames() []string {
	var names []string
	for _, i := range All() {
		if i.Source == "" {
			names = append(names, i.Name)
		}
	}
	return names
}

// Lookup returns the Info of the built-in strategy name; a run's user
// strategies are in its Registry (Registry.Lookup).
func Lookup(name string) (Info, error) { return (*Registry)(nil).Lookup(name) }

// Select is Registry.Select over the built-in strategies.
func Select(names []string) ([]string, error) { return (*Registry)(nil).Select(names) }

// SelectFrom is Select over any list of accepted names: package clients
// selects its clients with it. An unknown name gives errUnknown, wrapped
// with the name and the accepted ones.
func SelectFrom(names, all []string, errUnknown error) ([]string, error) {
	var out []string
	for _, n := range names {
		add := []string{n}
		if n == "all" {
			add = all
		} else if !slices.Contains(all, n) {
			return nil, fmt.Errorf("%w %q (accepted: %s, or all)", errUnknown, n, strings.Join(all, ", "))
		}
		for _, a := range add {
			if !slices.Contains(out, a) {
				out = append(out, a)
			}
		}
	}
	return out, nil
}

// New builds the named built-in strategy. It validates cfg after applying
// defaults.
func New(name string, cfg Config) (Strategy, error) { return (*Registry)(nil).New(name, cfg) }
