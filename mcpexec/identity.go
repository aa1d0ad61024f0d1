package mcpexec

import (
	"fmt"
	"net/url"
	"strings"
)

// Transport names as Describe reports them.
const (
	transportStdio  = "stdio"
	transportHTTP   = "streamable_http"
	transportCustom = "custom"
)

// transportName names the kind of transport the options ask for.
func (o *Options) transportName() string {
	switch {
	case len(o.Command) > 0:
		return transportStdio
	case o.URL != "":
		return transportHTTP
	}
	return transportCustom
}

// identity names the server for Describe and for error messages, without
// credentials: Options.Identity, else the command line, else the URL.
func (o *Options) identity() string {
	switch {
	case o.Identity != "":
		return o.Identity
	case len(o.Command) > 0:
		return strings.Join(o.Command, " ")
	case o.URL != "":
		return redactURL(o.URL)
	}
	return fmt.Sprintf("%T", o.Transport)
}

// redactURL drops user information, query and fragment, which may carry
// tokens.
func redactURL(raw string) string {
	u, err := url.Parse(raw)
	if err != nil {
		return "<unparseable URL>"
	}
	u.User, u.RawQuery, u.Fragment, u.RawFragment = nil, "", "", ""
	u.ForceQuery = false
	return u.String()
}
