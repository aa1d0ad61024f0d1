package provider

import (
	"net/http"
)

// DefaultConnections is the pool of a client whose options give neither a
// number of connections nor an HTTP client of their own.
const DefaultConnections = 32

// HTTPClient is the HTTP client of a model client that was given none: on
// a transport of its own (a clone of http.DefaultTransport, so proxies from
// the environment, timeouts and HTTP/2 negotiation are the standard
// library's) whose pool keeps up to connections idle connections per host
// (zero or less: DefaultConnections).
//
// connections should be the calls the client has under way at once: a
// steady load of that many calls then reuses the same connections instead
// of opening new ones, where http.DefaultTransport keeps 2 idle per host
// and closes the rest after each call. The pool does not bound the
// connections: a burst of more calls opens more, and the extra ones are
// closed when they go idle. Over TLS the transport offers HTTP/2, and a
// server that accepts it carries the calls as streams of one connection.
func HTTPClient(connections int) *http.Client {
	if connections <= 0 {
		connections = DefaultConnections
	}
	t := http.DefaultTransport.(*http.Transport).Clone()
	t.ForceAttemptHTTP2 = true
	t.MaxIdleConnsPerHost = connections
	t.MaxIdleConns = max(t.MaxIdleConns, connections)
	return &http.Client{Transport: t}
}
