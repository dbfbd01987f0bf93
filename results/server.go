package results

// Server describes the Redis-compatible server the runs were made against.
type Server struct {
	// Addr is the server's address, host:port; a cluster's seed addresses,
	// joined by commas.
	Addr string `json:"addr"`
	// Name is the server's flavour: "redis" or "valkey".
	Name string `json:"name"`
	// Version is the server's version, e.g. "7.2.4".
	Version string `json:"version"`
	// Managed is true when rlbench started the server itself.
	Managed bool `json:"managed"`
}

// String describes s in full, as the text report's header does: "redis
// 7.2.4 at 127.0.0.1:6379", with " (private server started by rlbench)"
// after a managed one; the address is left out when unknown.
func (s Server) String() string {
	line := s.Software()
	if s.Addr != "" {
		line += " at " + s.Addr
	}
	if s.Managed {
		line += " (private server started by rlbench)"
	}
	return line
}

// Short describes s in a few words, as compare's tables do: "redis 7.0.15
// (private)" for a managed server, whose address is a random port, and
// "redis 7.2.4 at 10.0.0.5:6379" for another.
func (s Server) Short() string {
	line := s.Software()
	switch {
	case s.Managed:
		line += " (private)"
	case s.Addr != "":
		line += " at " + s.Addr
	}
	return line
}

// Software is the server's flavour and version: "redis 7.0.15"; "redis"
// or "server 7.0.15" when one is unknown, "unknown server" when both are.
func (s Server) Software() string {
	switch {
	case s.Name != "" && s.Version != "":
		return s.Name + " " + s.Version
	case s.Name != "":
		return s.Name
	case s.Version != "":
		return "server " + s.Version
	}
	return "unknown server"
}
